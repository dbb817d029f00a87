package controllers

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestSchedulerReconcileDecisions checks the reconciler's decisions on a
// fake client: what it writes, and what it leaves alone.
func TestSchedulerReconcileDecisions(t *testing.T) {
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b")}
	type want struct {
		cluster   string // "" for none
		status    corev1.ConditionStatus
		reason    string
		message   string
		result    reconcile.Result
		untouched bool
	}
	cases := []struct {
		name string
		w    *v1alpha1.Workload
		want want
	}{
		{name: "a foreign schedulerName is left alone",
			w:    st.Workload("w", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "other" }),
			want: want{untouched: true}},
		{name: "a placed workload stays where it is",
			w:    st.Workload("w", st.PlacedOn("b")),
			want: want{untouched: true}},
		{name: "a rejection of this generation moves it",
			w:    st.Workload("w", st.PlacedOn("a"), st.Rejected("a", 1, "Insufficient cpu")),
			want: want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled}},
		{name: "a rejection of an older generation does not",
			w:    st.Workload("w", st.PlacedOn("a"), st.Rejected("a", 0, "Insufficient cpu")),
			want: want{untouched: true}},
		{name: "nothing fits: Unschedulable, retried later as a safety net",
			w: st.Workload("w", st.Selector("gpu", "true")),
			want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "0/2 clusters are available: 2 cluster(s) didn't match the cluster selector.", result: reconcile.Result{RequeueAfter: unschedulableRetry}}},
		{name: "every cluster rejected",
			w: st.Workload("w", st.PlacedOn("a"), st.Rejected("a", 1, "Insufficient cpu"), st.Rejected("b", 1, "Insufficient cpu")),
			want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "0/2 clusters are available: 2 cluster(s) rejected the candidate pods (Insufficient cpu).", result: reconcile.Result{RequeueAfter: unschedulableRetry}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(tc.w).WithStatusSubresource(tc.w).Build()
			before := &v1alpha1.Workload{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.w), before); err != nil {
				t.Fatal(err)
			}
			cache := scheduler.NewCache()
			for _, kc := range clusters {
				cache.UpsertCluster(kc)
			}
			r := &SchedulerReconciler{client: c, cache: cache, profiles: profiles, record: event.NewNopRecorder(), log: logging.NewNopLogger(), trigger: &trigger{}}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.w)})
			if err != nil {
				t.Fatal(err)
			}
			after := &v1alpha1.Workload{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.w), after); err != nil {
				t.Fatal(err)
			}
			if tc.want.untouched {
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("the workload changed (-before,+after):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tc.want.result, res); diff != "" {
				t.Errorf("result (-want,+got):\n%s", diff)
			}
			got := ""
			if after.Status.ClusterRef != nil {
				got = after.Status.ClusterRef.Name
			}
			cond := after.Status.GetCondition(v1alpha1.TypeScheduled)
			if got != tc.want.cluster || cond.Status != tc.want.status || string(cond.Reason) != tc.want.reason {
				t.Errorf("placed on %q with %s/%s, want %q with %s/%s", got, cond.Status, cond.Reason, tc.want.cluster, tc.want.status, tc.want.reason)
			}
			if tc.want.message != "" && cond.Message != tc.want.message {
				t.Errorf("message:\n got %s\nwant %s", cond.Message, tc.want.message)
			}
		})
	}

	t.Run("a deleted workload is not an error", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
		r := &SchedulerReconciler{client: c, cache: scheduler.NewCache(), profiles: profiles, record: event.NewNopRecorder(), log: logging.NewNopLogger()}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "gone"}}); err != nil {
			t.Fatal(err)
		}
	})
}
