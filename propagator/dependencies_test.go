package propagator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

func TestTemplateRefs(t *testing.T) {
	cmRef := func(name string, optional *bool) *corev1.ConfigMapKeySelector {
		return &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k", Optional: optional}
	}
	cases := map[string]struct {
		spec corev1.PodSpec
		want []Ref
	}{
		"nothing, and the default ServiceAccount goes nowhere": {
			spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "a"}}},
		},
		"every place a pod names a ConfigMap, a Secret or a ServiceAccount": {
			spec: corev1.PodSpec{
				ServiceAccountName: "runner",
				ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
				InitContainers:     []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}}}}},
				Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("settings", nil)}},
					{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
				}}},
				Volumes: []corev1.Volume{
					{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "files"}}}},
					{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
					{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected-cm"}}},
						{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected-secret"}}},
					}}}},
				},
			},
			want: []Ref{
				{Kind: KindConfigMap, Name: "files"}, {Kind: KindConfigMap, Name: "projected-cm"}, {Kind: KindConfigMap, Name: "settings"},
				{Kind: KindSecret, Name: "db"}, {Kind: KindSecret, Name: "init-env"}, {Kind: KindSecret, Name: "projected-secret"}, {Kind: KindSecret, Name: "pull"}, {Kind: KindSecret, Name: "tls"},
				{Kind: KindServiceAccount, Name: "runner"},
			},
		},
		"optional only when every reference says so": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("maybe", ptr.To(true))}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("both", ptr.To(true))}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmRef("both", ptr.To(false))}},
			}}}},
			want: []Ref{{Kind: KindConfigMap, Name: "both"}, {Kind: KindConfigMap, Name: "maybe", Optional: true}},
		},
		"optional in every place that can say so": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "a",
					EnvFrom: []corev1.EnvFromSource{
						{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Optional: ptr.To(true)}},
						{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Optional: ptr.To(true)}},
					},
					Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "key-secret"}, Key: "k", Optional: ptr.To(true)}}}},
				}},
				Volumes: []corev1.Volume{
					{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}, Optional: ptr.To(true)}}},
					{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret", Optional: ptr.To(true)}}},
					{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}, Optional: ptr.To(true)}},
						{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}, Optional: ptr.To(true)}},
					}}}},
				},
			},
			want: []Ref{
				{Kind: KindConfigMap, Name: "env-cm", Optional: true}, {Kind: KindConfigMap, Name: "proj-cm", Optional: true}, {Kind: KindConfigMap, Name: "vol-cm", Optional: true},
				{Kind: KindSecret, Name: "env-secret", Optional: true}, {Kind: KindSecret, Name: "key-secret", Optional: true},
				{Kind: KindSecret, Name: "proj-secret", Optional: true}, {Kind: KindSecret, Name: "vol-secret", Optional: true},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, TemplateRefs(&tc.spec)); diff != "" {
				t.Errorf("TemplateRefs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefs(t *testing.T) {
	w := &v1alpha1.Workload{Spec: v1alpha1.WorkloadSpec{
		TargetDeployment: v1alpha1.TargetDeployment{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Optional: ptr.To(true)}},
		}}}}}},
		Resources: []v1alpha1.ResourceReference{
			{APIVersion: "v1", Kind: KindConfigMap, Name: "settings"},
			{APIVersion: "v1", Kind: KindSecret, Name: "extra"},
			{APIVersion: "database.example.org/v1alpha1", Kind: "PostgreSQLInstance", Name: "db"},
		},
		Overrides: []v1alpha1.Override{{Name: "eu", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "eu-key"}, Key: "k"}}}}}},
	}}
	if got := TemplateRefs(&w.Spec.TargetDeployment.Template.Spec); len(got) != 1 || !got[0].Optional {
		t.Fatalf("TemplateRefs = %v, want settings optional (envFrom says so)", got)
	}
	refs, claims := Refs(w)
	// Listed in spec.resources, the optional ConfigMap is required.
	want := []Ref{{Kind: KindConfigMap, Name: "settings"}, {Kind: KindSecret, Name: "extra"}}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("Refs (-want +got):\n%s", diff)
	}
	if len(claims) != 1 || claims[0].Kind != "PostgreSQLInstance" {
		t.Errorf("claims = %v, want the PostgreSQLInstance", claims)
	}
	watched, _ := WatchedRefs(w)
	if diff := cmp.Diff(append(want, Ref{Kind: KindSecret, Name: "eu-key"}), watched); diff != "" {
		t.Errorf("WatchedRefs: an override's env is watched too (-want +got):\n%s", diff)
	}
}

func TestCopies(t *testing.T) {
	src := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "db", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}, UID: "u", ResourceVersion: "7"},
		Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("s3cret")},
	}
	c := NewCopy(src, "apps").(*corev1.Secret)
	if c.Namespace != "apps" || c.Name != "db" || c.UID != "" || c.ResourceVersion != "" || c.Labels["l"] != "" || c.Annotations["a"] != "" {
		t.Errorf("the copy keeps the source's metadata: %+v", c.ObjectMeta)
	}
	if string(c.Data["password"]) != "s3cret" || c.Type != corev1.SecretTypeOpaque {
		t.Errorf("the copy's data %v, type %s", c.Data, c.Type)
	}
	if !CopiedFrom(c, "team-a/db") || CopiedFrom(c, "team-b/db") {
		t.Error("CopiedFrom does not tell the source")
	}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{AnnotationSource: "team-a/db"}}}
	if CopiedFrom(theirs, "team-a/db") {
		t.Error("an object without placer's label is taken for placer's copy")
	}

	if !SetUser(c, "w2", true) || !SetUser(c, "w1", true) || SetUser(c, "w1", true) {
		t.Error("SetUser does not report what changed")
	}
	if got := Users(c); !cmp.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("Users = %v, want [w1 w2]", got)
	}
	if !SetUser(c, "w1", false) || SetUser(c, "w1", false) || !cmp.Equal(Users(c), []string{"w2"}) {
		t.Errorf("after w1 let go, users %v, want [w2]", Users(c))
	}

	edited := src.DeepCopy()
	edited.Data["password"] = []byte("n3w")
	if Sync(c, NewCopy(src, "apps")) {
		t.Error("Sync changed an up-to-date copy")
	}
	if !Sync(c, NewCopy(edited, "apps")) || string(c.Data["password"]) != "n3w" || !cmp.Equal(Users(c), []string{"w2"}) {
		t.Errorf("Sync: data %v, users %v; want the edit, and the users kept", c.Data, Users(c))
	}

	sa := NewCopy(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Secrets: []corev1.ObjectReference{{Name: "token"}}}, "apps").(*corev1.ServiceAccount)
	if len(sa.ImagePullSecrets) != 1 || len(sa.Secrets) != 0 {
		t.Errorf("the ServiceAccount's copy: imagePullSecrets %v, secrets %v; want the pull Secret only", sa.ImagePullSecrets, sa.Secrets)
	}
}
