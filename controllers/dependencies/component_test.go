package dependencies

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/controllers/shared/sharedtest"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// needing is a Workload whose pods read Secret db, ConfigMap settings and
// run as ServiceAccount runner.
func needing() *v1alpha1.Workload {
	w := st.Workload("web", st.Replicas(2), func(w *v1alpha1.Workload) { w.UID = "uid-web" })
	spec := &w.Spec.TargetDeployment.Template.Spec
	spec.ServiceAccountName = "runner"
	spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "P", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}})
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}})
	return w
}

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "default", Name: name} }

var (
	db       = &corev1.Secret{ObjectMeta: meta("db"), Data: map[string][]byte{"password": []byte("s3cret")}}
	settings = &corev1.ConfigMap{ObjectMeta: meta("settings"), Data: map[string]string{"mode": "fast"}}
	runner   = &corev1.ServiceAccount{ObjectMeta: meta("runner")}
)

// inMember lists what the member's namespace default holds of each kind.
func inMember(t *testing.T, m *clustertest.Member) []string {
	t.Helper()
	cl, err := m.Tenant("default")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}} {
		for _, name := range []string{"db", "settings", "runner"} {
			if err := cl.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, o); err == nil {
				out = append(out, kindOf(o)+"/"+name)
			} else if !kerrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	return out
}

// TestComponent: what a Workload's pods need is observed, copied (only
// the ServiceAccount into a cluster that does not commit yet), reported
// for the status, and released by its last user.
func TestComponent(t *testing.T) {
	ctx := context.Background()
	w := needing()
	m := clustertest.NewMember("a")
	rd := New(sharedtest.NewSources(db, settings, runner)).Read(w)
	o, err := rd.Observe(ctx, m, w, true)
	if err != nil || len(o.Problems) > 0 || o.Waiting {
		t.Fatalf("Observe = %+v (%v), want nothing missing", o, err)
	}
	// A copy of a ServiceAccount the template named before stays
	// recorded beside the new one: nothing is let go without all, and
	// what is recorded is what a release names.
	was := v1alpha1.Dependency{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Kind: propagator.KindServiceAccount, Name: "runner0", Copied: true}
	applied, err := rd.Apply(ctx, m, w, false, false, []v1alpha1.Dependency{was})
	sa := v1alpha1.Dependency{Cluster: was.Cluster, Kind: propagator.KindServiceAccount, Name: "runner", Copied: true}
	if err != nil || !applied.Set || !slices.Equal(applied.Dependencies, []v1alpha1.Dependency{was, sa}) || applied.CopiedInto != "default" {
		t.Fatalf("Apply(ServiceAccount only) = %+v (%v), want the copy recorded beside what the cluster had", applied, err)
	}
	if got := inMember(t, m); !slices.Equal(got, []string{"ServiceAccount/runner"}) {
		t.Errorf("after the ServiceAccount alone the member holds %v", got)
	}
	applied, err = rd.Apply(ctx, m, w, true, false, nil)
	if err != nil || !applied.Set || len(applied.Dependencies) != 3 {
		t.Fatalf("Apply(all) = %+v (%v), want three entries", applied, err)
	}
	if got := inMember(t, m); len(got) != 3 {
		t.Errorf("after everything the member holds %v", got)
	}
	w.Status.Dependencies = applied.Dependencies
	cl, _ := m.Tenant(w.Namespace)
	if err := Release(ctx, cl, m, w, "default"); err != nil {
		t.Fatal(err)
	}
	if got := inMember(t, m); len(got) != 0 {
		t.Errorf("after its last user let go the member holds %v", got)
	}
}

// TestObserve: a required object that is missing, one whose watch has not
// listed, and another source's copy in the member.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	w := needing()
	missing := New(sharedtest.NewSources(settings, runner)).Read(w)
	o, err := missing.Observe(ctx, clustertest.NewMember("a"), w, true)
	if err != nil || len(o.Problems) != 1 || !strings.Contains(o.Problems[0], "Secret default/db does not exist") || !o.Recheck {
		t.Errorf("Secret db missing: %+v (%v), want it named, and a later look", o, err)
	}
	src := sharedtest.NewSources(db, settings, runner)
	src.Unsynced[shared.CoreKey(propagator.KindSecret, "default", "db")] = true
	if o, err := New(src).Read(w).Observe(ctx, clustertest.NewMember("a"), w, true); err != nil || !o.Waiting {
		t.Errorf("a watch not listed: %+v (%v), want Waiting", o, err)
	}
	other := propagator.NewCopy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}}, "default")
	m := clustertest.NewMember("a", clustertest.WithObjects(other))
	_, err = New(sharedtest.NewSources(db, settings, runner)).Read(w).Apply(ctx, m, w, true, false, nil)
	var p *shared.Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonNameConflict {
		t.Errorf("another source's copy in the member: %v, want a NameConflict problem", err)
	}
}
