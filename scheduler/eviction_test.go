package scheduler_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestMustLeave(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	added := func(ago time.Duration) st.ClusterOption {
		return func(kc *v1alpha1.KubernetesCluster) {
			for i := range kc.Spec.Taints {
				if kc.Spec.Taints[i].Effect == v1alpha1.TaintEffectNoExecute {
					t := metav1.NewTime(now.Add(-ago))
					kc.Spec.Taints[i].TimeAdded = &t
				}
			}
		}
	}
	secs := func(n int64) st.WorkloadOption {
		return func(w *v1alpha1.Workload) {
			last := &w.Spec.ClusterTolerations[len(w.Spec.ClusterTolerations)-1]
			last.TolerationSeconds = &n
		}
	}
	deleting := st.Deleting(now)
	defaults := scheduler.DefaultTolerations(300, 60)
	type want struct {
		Reason string
		After  time.Duration
	}
	cases := []struct {
		name     string
		cluster  *v1alpha1.KubernetesCluster
		w        *v1alpha1.Workload
		defaults bool
		want     want
	}{
		{name: "no taint: stays, no deadline", cluster: st.Cluster("a"), w: st.Workload("w"), want: want{}},
		{name: "a NoSchedule taint does not move what is placed", cluster: st.Cluster("a", st.Taint("k", "v", v1alpha1.TaintEffectNoSchedule)), w: st.Workload("w"), want: want{}},
		{name: "an untolerated NoExecute taint moves it at once", cluster: st.Cluster("a", st.Taint("k", "v", v1alpha1.TaintEffectNoExecute), added(time.Second)), w: st.Workload("w"),
			want: want{Reason: v1alpha1.ReasonTainted}},
		{name: "tolerated without seconds: stays for good", cluster: st.Cluster("a", st.Taint("k", "v", v1alpha1.TaintEffectNoExecute), added(time.Hour)),
			w: st.Workload("w", st.Tolerate("k", v1alpha1.TolerationOperator("Exists"), "", v1alpha1.TaintEffectNoExecute)), want: want{}},
		{name: "tolerated for 30s, added 10s ago: stays 20s more", cluster: st.Cluster("a", st.Taint("k", "v", v1alpha1.TaintEffectNoExecute), added(10*time.Second)),
			w: st.Workload("w", st.Tolerate("k", "Exists", "", v1alpha1.TaintEffectNoExecute), secs(30)), want: want{After: 20 * time.Second}},
		{name: "tolerated for 30s, added 30s ago: moves", cluster: st.Cluster("a", st.Taint("k", "v", v1alpha1.TaintEffectNoExecute), added(30*time.Second)),
			w: st.Workload("w", st.Tolerate("k", "Exists", "", v1alpha1.TaintEffectNoExecute), secs(30)), want: want{Reason: v1alpha1.ReasonTainted}},
		{name: "the smallest seconds of the matching tolerations count", cluster: st.Cluster("a", st.Taint("k", "v", v1alpha1.TaintEffectNoExecute), added(10*time.Second)),
			w: st.Workload("w", st.Tolerate("k", "Exists", "", v1alpha1.TaintEffectNoExecute), st.Tolerate("", "Exists", "", ""), secs(15)), want: want{After: 5 * time.Second}},
		{name: "unreachable: the default toleration (60s) holds it for now", cluster: st.Cluster("a", st.Taint(v1alpha1.TaintClusterUnreachable, "", v1alpha1.TaintEffectNoExecute), added(59*time.Second)),
			w: st.Workload("w"), defaults: true, want: want{After: time.Second}},
		{name: "unreachable beyond the default toleration: moves, reason Unreachable", cluster: st.Cluster("a", st.Taint(v1alpha1.TaintClusterUnreachable, "", v1alpha1.TaintEffectNoExecute), added(61*time.Second)),
			w: st.Workload("w"), defaults: true, want: want{Reason: v1alpha1.ReasonUnreachable}},
		{name: "not-ready: the default toleration is its own (300s)", cluster: st.Cluster("a", st.Taint(v1alpha1.TaintClusterNotReady, "", v1alpha1.TaintEffectNoExecute), added(100*time.Second)),
			w: st.Workload("w"), defaults: true, want: want{After: 200 * time.Second}},
		{name: "a Workload's own toleration of the key replaces the default", cluster: st.Cluster("a", st.Taint(v1alpha1.TaintClusterUnreachable, "", v1alpha1.TaintEffectNoExecute), added(time.Hour)),
			w: st.Workload("w", st.Tolerate(v1alpha1.TaintClusterUnreachable, "Exists", "", v1alpha1.TaintEffectNoExecute)), defaults: true, want: want{}},
		{name: "a Workload's own short toleration of the key moves it sooner", cluster: st.Cluster("a", st.Taint(v1alpha1.TaintClusterUnreachable, "", v1alpha1.TaintEffectNoExecute), added(6*time.Second)),
			w: st.Workload("w", st.Tolerate(v1alpha1.TaintClusterUnreachable, "Exists", "", v1alpha1.TaintEffectNoExecute), secs(5)), defaults: true, want: want{Reason: v1alpha1.ReasonUnreachable}},
		{name: "without defaults an unreachable cluster is left at once", cluster: st.Cluster("a", st.Taint(v1alpha1.TaintClusterUnreachable, "", v1alpha1.TaintEffectNoExecute), added(time.Second)),
			w: st.Workload("w"), want: want{Reason: v1alpha1.ReasonUnreachable}},
		{name: "a cluster being deleted is left at once, whatever is tolerated", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.Tolerate("", "Exists", "", "")), want: want{Reason: v1alpha1.ReasonClusterDeleted}},
		{name: "a batch Workload that ran to its end never leaves, tainted or deleted", cluster: st.Cluster("a", deleting, st.Taint("k", "v", v1alpha1.TaintEffectNoExecute), added(time.Hour)),
			w: st.Workload("w", func(w *v1alpha1.Workload) {
				complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 1 replicas succeeded in a", w.Generation)
				w.Status.SetConditions(complete, ready)
			}), want: want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d []corev1.Toleration
			if tc.defaults {
				d = defaults
			}
			leave, after := scheduler.MustLeave(tc.w, scheduler.NewClusterInfo(tc.cluster), scheduler.ExecutionTolerations(tc.w, d), now)
			got := want{After: after}
			if leave != nil {
				got.Reason = leave.Reason
				if leave.Message == "" {
					t.Error("a reason to leave without a message")
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MustLeave() (-want,+got):\n%s", diff)
			}
		})
	}
}
