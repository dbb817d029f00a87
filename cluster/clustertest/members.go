// Package clustertest has an in-memory cluster.Members for unit tests of
// the propagator: each member's chaperons and Services live in a
// controller-runtime fake client, whose interceptors can make the member
// refuse or fail a request.
package clustertest

import (
	"context"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
)

// Scheme knows what a member holds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = mcv1alpha1.AddToScheme(s)
	return s
}

// Member is an in-memory member cluster.
type Member struct {
	Key types.NamespacedName
	// HostName is its API server; two Members of one host are one cluster.
	HostName string
	// ID is the identity it showed (Identity); two Members of one ID are
	// one cluster too.
	ID string
	// NotSynced makes it a member whose chaperon watch has not synced (or
	// that does not answer).
	NotSynced bool
	// Namespaces is its KubernetesCluster's spec.targetNamespaces.
	Namespaces map[string]v1alpha1.NamespaceName
	// Client holds its objects.
	Client client.WithWatch
	// Tenants are the tenants it was written for, in order.
	Tenants []string
	// unwatched are chaperons its API server has that its watch has not
	// delivered yet (by name).
	unwatched map[string]bool
}

var _ cluster.Member = &Member{}

// Option changes a Member being built.
type Option func(*Member, *fake.ClientBuilder)

// WithObjects puts objects in the member.
func WithObjects(objs ...client.Object) Option {
	return func(_ *Member, b *fake.ClientBuilder) { b.WithObjects(objs...) }
}

// WithInterceptor makes the member answer some requests its own way.
func WithInterceptor(f interceptor.Funcs) Option {
	return func(_ *Member, b *fake.ClientBuilder) { b.WithInterceptorFuncs(f) }
}

// NotWatchedYet puts chaperons in the member that its watch has not
// delivered yet: only ChaperonsLive sees them.
func NotWatchedYet(chs ...client.Object) Option {
	return func(m *Member, b *fake.ClientBuilder) {
		b.WithObjects(chs...)
		if m.unwatched == nil {
			m.unwatched = map[string]bool{}
		}
		for _, ch := range chs {
			m.unwatched[ch.GetName()] = true
		}
	}
}

// NotSynced makes the member one whose watch has not synced.
func NotSynced() Option { return func(m *Member, _ *fake.ClientBuilder) { m.NotSynced = true } }

// Host sets the member's API server.
func Host(h string) Option { return func(m *Member, _ *fake.ClientBuilder) { m.HostName = h } }

// NewMember returns the member registered as KubernetesCluster default/name.
func NewMember(name string, opts ...Option) *Member {
	m := &Member{Key: types.NamespacedName{Namespace: "default", Name: name}, HostName: "https://" + name + ".example.com"}
	b := fake.NewClientBuilder().WithScheme(Scheme()).WithStatusSubresource(&mcv1alpha1.PodChaperon{})
	for _, o := range opts {
		o(m, b)
	}
	m.Client = b.Build()
	return m
}

// ClusterKey is the member's KubernetesCluster.
func (m *Member) ClusterKey() types.NamespacedName { return m.Key }

// Host is the member's API server.
func (m *Member) Host() string { return m.HostName }

// Identity is the identity it showed.
func (m *Member) Identity() string { return m.ID }

// Synced reports whether the member's chaperons are listed.
func (m *Member) Synced() bool { return !m.NotSynced }

// Chaperons returns the Workload's chaperons the watch has seen, sorted
// by name.
func (m *Member) Chaperons(ctx context.Context, workload types.UID) ([]*mcv1alpha1.PodChaperon, error) {
	chs, err := m.ChaperonsLive(ctx, workload)
	return slices.DeleteFunc(chs, func(ch *mcv1alpha1.PodChaperon) bool { return m.unwatched[ch.Name] }), err
}

// ChaperonsLive returns the Workload's chaperons, sorted by name.
func (m *Member) ChaperonsLive(ctx context.Context, workload types.UID) ([]*mcv1alpha1.PodChaperon, error) {
	l := &mcv1alpha1.PodChaperonList{}
	if err := m.Client.List(ctx, l, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(workload)}); err != nil {
		return nil, err
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	out := make([]*mcv1alpha1.PodChaperon, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// HeldRunnerUps counts the runner-up candidates waiting in the member.
func (m *Member) HeldRunnerUps(ctx context.Context) (int, error) {
	l := &mcv1alpha1.PodChaperonList{}
	if err := m.Client.List(ctx, l); err != nil {
		return 0, err
	}
	n := 0
	for i := range l.Items {
		if l.Items[i].HeldRunnerUp() {
			n++
		}
	}
	return n, nil
}

// Tenant returns the member's client, recording the tenant.
func (m *Member) Tenant(namespace string) (client.Client, error) {
	m.Tenants = append(m.Tenants, namespace)
	return m.Client, nil
}

// TargetNamespace is where the Workload's pods go in the member.
func (m *Member) TargetNamespace(w *v1alpha1.Workload) string {
	return w.TargetNamespace(m.Namespaces)
}

// Members is a fleet of in-memory members.
type Members []*Member

var _ cluster.Members = Members{}

// Member returns the member registered as key, or nil.
func (ms Members) Member(key types.NamespacedName) cluster.Member {
	for _, m := range ms {
		if m.Key == key {
			return m
		}
	}
	return nil
}

// Members returns every member.
func (ms Members) Members() []cluster.Member {
	out := make([]cluster.Member, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
