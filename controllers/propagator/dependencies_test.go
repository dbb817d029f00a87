package propagator

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/controllers/shared/sharedtest"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// mapSources are the management objects the propagator reads, in memory.
type mapSources = sharedtest.Sources

var sources = sharedtest.NewSources

// copyIn returns the member's object of a kind and name in namespace
// default, or nil.
func copyIn(t *testing.T, m *clustertest.Member, kind, name string) client.Object {
	t.Helper()
	o := propagator.NewObject(kind)
	if err := m.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, o); err != nil {
		return nil
	}
	return o
}

// needs makes the Workload's pods read Secret db (env), ConfigMap
// settings (a volume) and run as ServiceAccount runner.
func needs(w *v1alpha1.Workload) {
	spec := &w.Spec.TargetDeployment.Template.Spec
	spec.ServiceAccountName = "runner"
	spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "P", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}})
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}})
}

// theSources are the sources of needs, in the management namespace default.
func theSources(extra ...client.Object) *mapSources {
	return sources(append([]client.Object{
		&corev1.Secret{ObjectMeta: objectMeta("db"), Data: map[string][]byte{"password": []byte("s3cret")}},
		&corev1.ConfigMap{ObjectMeta: objectMeta("settings"), Data: map[string]string{"mode": "fast"}},
		&corev1.ServiceAccount{ObjectMeta: objectMeta("runner")},
	}, extra...)...)
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: "1"}
}

// theirs is an object of the member that placer did not copy.
func theirs(o client.Object) client.Object { o.SetNamespace("default"); return o }

// runningIn: member a, built with opts, runs w's two replicas, and holds objs.
func runningIn(w *v1alpha1.Workload, opts []clustertest.Option, objs ...client.Object) clustertest.Members {
	objs = append(candidates(w, 2, reserved, allowed, running), objs...)
	return clustertest.Members{clustertest.NewMember("a", append([]clustertest.Option{clustertest.WithObjects(objs...)}, opts...)...)}
}

// reservedIn: member a holds w's two reserved candidates and the copy of
// its ServiceAccount runner; f intercepts its client.
func reservedIn(w *v1alpha1.Workload, f interceptor.Funcs) clustertest.Members {
	objs := append(candidates(w, 2, reserved), propagator.NewCopy(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}, "default"))
	return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(objs...), clustertest.WithInterceptor(f))}
}

// secretForbidden is a member refusing the tenant a Secret.
func secretForbidden(name string) error {
	return kerrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, name, errFromMember)
}

// A member that does not let the tenant read Secrets, and one that lets
// it read them but not create them.
var (
	refuseSecretGets = interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
		if _, ok := o.(*corev1.Secret); ok {
			return secretForbidden(key.Name)
		}
		return c.Get(ctx, key, o, opts...)
	}}
	refuseSecretCreates = interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
		if _, ok := o.(*corev1.Secret); ok {
			return secretForbidden(o.GetName())
		}
		return c.Create(ctx, o, opts...)
	}}
)

// usedCopy is placer's copy of src in the member namespace default, used
// by the Workloads of the given UIDs.
func usedCopy(src client.Object, users ...string) client.Object {
	c := propagator.NewCopy(src, "default")
	for _, u := range users {
		propagator.SetUser(c, u, true)
	}
	return c
}

// wantSynced: Secret db in the member holds the source's data, used by
// the Workload uid and by another.
func wantSynced(t *testing.T, m *clustertest.Member, uid string) {
	t.Helper()
	s := copyIn(t, m, propagator.KindSecret, "db").(*corev1.Secret)
	if string(s.Data["password"]) != "s3cret" || !slices.Equal(propagator.Users(s), []string{"other", uid}) {
		t.Errorf("Secret db: data %q, users %v; want the source's, and both users", s.Data["password"], propagator.Users(s))
	}
}

// clusterA is member a's KubernetesCluster.
var clusterA = v1alpha1.ClusterReference{Name: "a", Namespace: "default"}

// clusterKeyA is cluster a's key.
var clusterKeyA = types.NamespacedName{Name: "a", Namespace: "default"}

// wantCopy: the member holds an object of that kind and name.
func wantCopy(t *testing.T, m *clustertest.Member, kind, name string) {
	t.Helper()
	if copyIn(t, m, kind, name) == nil {
		t.Errorf("%s %s is not in %s", kind, name, m.Key.Name)
	}
}

// TestDependencyClusters: a Workload is indexed once under each cluster
// its status.dependencies and status.placedNamespaces name, in the
// Workload's namespace when the entry names none.
func TestDependencyClusters(t *testing.T) {
	w := st.Workload("w")
	for _, c := range []v1alpha1.ClusterReference{{Name: "a"}, {Name: "a"}, {Name: "b", Namespace: "fleet"}} {
		w.Status.Dependencies = append(w.Status.Dependencies, v1alpha1.Dependency{Cluster: c, Kind: "Secret", Name: "db"})
	}
	w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "fleet"}, Namespace: "apps"},
		{Cluster: v1alpha1.ClusterReference{Name: "c"}, Namespace: "apps"}}
	got := shared.DependencyClusters(w)
	want := []string{"default/a", "fleet/b", "default/c"}
	if !slices.Equal(got, want) {
		t.Errorf("shared.DependencyClusters = %v, want %v", got, want)
	}
	if got := shared.DependencyClusters(st.Workload("none")); len(got) != 0 {
		t.Errorf("shared.DependencyClusters of a Workload with no copies = %v, want none", got)
	}
}

// TestSetDependencies: a cluster's entries are replaced where they are, so
// that a pass that delivers what the status says already changes nothing
// (a status it would write again for an order alone); a cluster with none
// goes after the others, and nil lets go of them.
func TestSetDependencies(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "default", Name: "a"}, types.NamespacedName{Namespace: "default", Name: "b"}
	w := st.Workload("web")
	w.Status.Dependencies = append(copies("a", "ServiceAccount/runner"), copies("b", "ServiceAccount/runner", "Secret/db")...)
	before := slices.Clone(w.Status.Dependencies)
	setDependencies(w, a, copies("a", "ServiceAccount/runner"))
	if !slices.Equal(w.Status.Dependencies, before) {
		t.Errorf("the same entries set again: %+v, want %+v", w.Status.Dependencies, before)
	}
	setDependencies(w, a, copies("a", "ServiceAccount/runner", "ConfigMap/settings"))
	want := append(copies("a", "ServiceAccount/runner", "ConfigMap/settings"), copies("b", "ServiceAccount/runner", "Secret/db")...)
	if !slices.Equal(w.Status.Dependencies, want) {
		t.Errorf("a's entries replaced: %+v, want %+v", w.Status.Dependencies, want)
	}
	setDependencies(w, types.NamespacedName{Namespace: "default", Name: "c"}, copies("c", "ServiceAccount/runner"))
	setDependencies(w, b, nil)
	want = append(copies("a", "ServiceAccount/runner", "ConfigMap/settings"), copies("c", "ServiceAccount/runner")...)
	if !slices.Equal(w.Status.Dependencies, want) {
		t.Errorf("c added, b let go: %+v, want %+v", w.Status.Dependencies, want)
	}
}

// TestWorkloadsOfCluster: a cluster's change (Ready, deletion) brings back
// the Workloads whose status names it and those with copies there, each
// once: a runner-up dropped while it did not answer lets go of its copies
// when it answers again, or forgets them when it is deleted.
func TestWorkloadsOfCluster(t *testing.T) {
	named := st.Workload("named", nominate("a", "b"))
	copied := st.Workload("copied", nominate("a"), func(w *v1alpha1.Workload) { w.Status.Dependencies = copies("c", "ServiceAccount/runner") })
	both := st.Workload("both", nominate("a", "c"), func(w *v1alpha1.Workload) { w.Status.Dependencies = copies("c", "ServiceAccount/runner") })
	mgmt := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(named, copied, both).
		WithIndex(&v1alpha1.Workload{}, shared.IndexWorkloadClusters, shared.WorkloadClusters).
		WithIndex(&v1alpha1.Workload{}, shared.IndexWorkloadDependencyClusters, shared.DependencyClusters).Build()
	r := NewReconciler(mgmt, clustertest.Members{}, timeout, &recorder{}, logging.NewNopLogger())
	names := func(cluster string) []string {
		var out []string
		for _, req := range r.workloadsOf(context.Background(), st.Cluster(cluster)) {
			out = append(out, req.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names("c"); !slices.Equal(got, []string{"both", "copied"}) {
		t.Errorf("Workloads of c: %v, want both (named, and copies there) once, and copied (copies there alone)", got)
	}
	if got := names("b"); !slices.Equal(got, []string{"named"}) {
		t.Errorf("Workloads of b: %v, want named", got)
	}
}
