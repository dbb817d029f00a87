package predicates

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestPodSecurity(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("default"),
		st.Cluster("privileged", st.PodSecurity(v1alpha1.PodSecurityPrivileged)),
		st.Cluster("baseline", st.PodSecurity(v1alpha1.PodSecurityBaseline)),
		st.Cluster("restricted", st.PodSecurity(v1alpha1.PodSecurityRestricted)),
	}
	privileged := st.Pod(func(p *corev1.PodSpec) {
		p.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	hostRoot := st.Pod(func(p *corev1.PodSpec) {
		p.HostPID = true
		p.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	})
	hardened := st.Pod(func(p *corev1.PodSpec) {
		p.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		p.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	})
	baselineFails := func(detail string) string { return fmt.Sprintf(ErrReasonPodSecurity, "baseline", detail) }
	restrictedFails := func(detail string) string { return fmt.Sprintf(ErrReasonPodSecurity, "restricted", detail) }
	restrictedPlain := restrictedFails(`allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false); ` +
		`unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]); ` +
		`runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true); ` +
		`seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`)
	runFilterCases(t, NewPodSecurity, []filterCase{
		{name: "a plain pod meets baseline, not restricted", clusters: clusters, w: st.Workload("w"),
			want: map[string]string{"default": "", "privileged": "", "baseline": "", "restricted": restrictedPlain}},
		{name: "a privileged container goes only where privileged is allowed", clusters: clusters, w: st.Workload("w", privileged),
			want: map[string]string{
				"default":    baselineFails(`privileged (container "app" must not set securityContext.privileged=true)`),
				"privileged": "",
				"baseline":   baselineFails(`privileged (container "app" must not set securityContext.privileged=true)`),
				"restricted": restrictedFails(`privileged (container "app" must not set securityContext.privileged=true); allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false); unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]); runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true); seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`),
			}},
		{name: "host namespaces and hostPath / are refused at baseline", clusters: clusters[:3], w: st.Workload("w", hostRoot),
			want: map[string]string{
				"default":    baselineFails(`host namespaces (hostPID=true); hostPath volumes (volume "root")`),
				"privileged": "",
				"baseline":   baselineFails(`host namespaces (hostPID=true); hostPath volumes (volume "root")`),
			}},
		{name: "a hardened pod goes everywhere", clusters: clusters, w: st.Workload("w", hardened),
			want: map[string]string{"default": "", "privileged": "", "baseline": "", "restricted": ""}},
		{name: "the namespace's enforce label is stricter than the cluster's level", clusters: clusters[1:2],
			ns: map[string]map[string]string{"default": {"pod-security.kubernetes.io/enforce": "baseline"}}, w: st.Workload("w", privileged),
			want: map[string]string{"privileged": baselineFails(`privileged (container "app" must not set securityContext.privileged=true)`)}},
		{name: "a laxer namespace label does not relax the cluster's level", clusters: clusters[3:],
			ns: map[string]map[string]string{"default": {"pod-security.kubernetes.io/enforce": "privileged"}}, w: st.Workload("w"),
			want: map[string]string{"restricted": restrictedPlain}},
	})
}
