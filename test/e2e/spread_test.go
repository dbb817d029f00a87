package e2e

import (
	"context"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// placedSpread creates a Divided or Duplicated Workload whose pods are
// labelled app=NAME and waits until all its replicas are Ready.
func placedSpread(t *testing.T, c client.Client, wc client.WithWatch, name string, replicas int32, rs *v1alpha1.ReplicaScheduling, opts ...st.WorkloadOption) *v1alpha1.Workload {
	t.Helper()
	w := newSpread(t, c, name, replicas, rs, opts...)
	testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
		return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	})
	return w
}

// newSpread creates a spread Workload whose pods are labelled app=name.
func newSpread(t *testing.T, c client.Client, name string, replicas int32, rs *v1alpha1.ReplicaScheduling, opts ...st.WorkloadOption) *v1alpha1.Workload {
	t.Helper()
	w := st.Workload(name, append([]st.WorkloadOption{st.Replicas(replicas), st.Requests("100m", "64Mi")}, opts...)...)
	w.UID, w.Generation = "", 0
	w.Spec.TargetDeployment.Template.Labels = map[string]string{"app": name}
	w.Spec.Placement.ReplicaScheduling = rs
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// boundPods counts the pods labelled app=name bound to a node in m.
func boundPods(t *testing.T, m *member, name string) int {
	t.Helper()
	n := 0
	for _, p := range labelledPods(t, m, "app", name) {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// sharesOf lists a spread Workload's shares, but those being deleted.
func sharesOf(t *testing.T, c client.Client, w *v1alpha1.Workload) []*v1alpha1.Workload {
	t.Helper()
	l := &v1alpha1.WorkloadList{}
	if err := c.List(context.Background(), l, client.InNamespace(w.Namespace), client.MatchingLabels{v1alpha1.LabelShareOf: w.Name}); err != nil {
		t.Fatal(err)
	}
	var out []*v1alpha1.Workload
	for i := range l.Items {
		if l.Items[i].DeletionTimestamp == nil {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// sharesByCluster maps each member to the replicas of the Workload's share
// there.
func sharesByCluster(t *testing.T, c client.Client, w *v1alpha1.Workload) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, sh := range sharesOf(t, c, w) {
		out[sh.Spec.TargetCluster.Name] += sh.ReplicaCount()
	}
	return out
}

// labelledPods are the pods of a member with the label, not being deleted.
func labelledPods(t *testing.T, m *member, key, value string) []corev1.Pod {
	t.Helper()
	l, err := m.target.Clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: key + "=" + value})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}
