package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterTenancy(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("own", st.InNamespace("team-a")),
		st.Cluster("private", st.InNamespace("team-b")),
		st.Cluster("shared", st.InNamespace("platform"), st.ServeNamespaces("placer.dev/tenant", "true")),
		st.Cluster("everyone", st.InNamespace("platform"), st.ServeNamespaces()),
	}
	ns := map[string]map[string]string{
		"team-a": {"placer.dev/tenant": "true"},
		"team-b": {},
	}
	// team-a and team-c accept what platform offers them; team-b binds
	// platform too, but is offered only "everyone".
	bound := map[string][]string{"team-a": {"platform"}, "team-b": {"platform"}, "team-c": {"platform"}}
	runFilterCases(t, NewClusterTenancy, []filterCase{
		{name: "a tenant's Workload lands on its own cluster and on the clusters offered to its namespace that it bound", clusters: clusters, ns: ns, bound: bound,
			w:    st.Workload("w", st.WNamespace("team-a")),
			want: map[string]string{"own": "", "private": ErrReasonOtherTenant, "shared": "", "everyone": ""}},
		{name: "offered and not bound: consent on one side only attracts nothing", clusters: clusters, ns: ns,
			w:    st.Workload("w", st.WNamespace("team-a")),
			want: map[string]string{"own": "", "private": ErrReasonOtherTenant, "shared": ErrReasonOtherTenant, "everyone": ErrReasonOtherTenant}},
		{name: "bound and not offered: a namespace the shared cluster does not select", clusters: clusters, ns: ns, bound: bound,
			w:    st.Workload("w", st.WNamespace("team-b")),
			want: map[string]string{"own": ErrReasonOtherTenant, "private": "", "shared": ErrReasonOtherTenant, "everyone": ""}},
		{name: "a namespace unknown to the cache has no labels", clusters: clusters, ns: ns, bound: bound,
			w:    st.Workload("w", st.WNamespace("team-c")),
			want: map[string]string{"own": ErrReasonOtherTenant, "private": ErrReasonOtherTenant, "shared": ErrReasonOtherTenant, "everyone": ""}},
		{name: "binding another namespace does not bind this one", clusters: clusters, ns: ns, bound: map[string][]string{"team-a": {"team-b"}},
			w:    st.Workload("w", st.WNamespace("team-a")),
			want: map[string]string{"own": "", "private": ErrReasonOtherTenant, "shared": ErrReasonOtherTenant, "everyone": ErrReasonOtherTenant}},
		{name: "naming another tenant's cluster does not open it", clusters: clusters, ns: ns, bound: bound,
			w:    st.Workload("w", st.WNamespace("team-b"), st.Target("own", "team-a")),
			want: map[string]string{"own": ErrReasonOtherTenant, "private": "", "shared": ErrReasonOtherTenant, "everyone": ""}},
	})
}
