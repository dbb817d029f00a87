package scheduler_test

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestCachePending(t *testing.T) {
	c := scheduler.NewCache()
	c.UpsertWorkload(st.Workload("a"))
	c.UpsertWorkload(st.Workload("b"))
	c.UpsertWorkload(st.Workload("placed", st.PlacedOn("east")))
	c.UpsertWorkload(st.Workload("foreign", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "other" }))
	ours := map[string]bool{v1alpha1.DefaultSchedulerName: true}
	if got := len(c.Pending(ours)); got != 2 {
		t.Errorf("Pending = %d, want 2", got)
	}
	if got := c.PendingCount(ours); got != 2 {
		t.Errorf("PendingCount = %d, want 2", got)
	}
	c.UpsertWorkload(st.Workload("a", st.PlacedOn("east")))
	if got := c.PendingCount(ours); got != 1 {
		t.Errorf("PendingCount after a is placed = %d, want 1", got)
	}
}
