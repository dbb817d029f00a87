package shared

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/source"
)

// TestSourceAfter: a controller waits for SourceAfter's handlers before its
// workers start (a SyncingSource whose WaitForSync returns once each
// says synced), and fails to start when they never do.
func TestSourceAfter(t *testing.T) {
	var ready atomic.Bool
	s, ok := (&Trigger{}).SourceAfter(func() bool { return true }, ready.Load).(source.SyncingSource)
	if !ok {
		t.Fatal("SourceAfter is no SyncingSource: the controller would not wait for it")
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitForSync(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("WaitForSync returned (%v) before every handler had synced", err)
	case <-time.After(300 * time.Millisecond):
	}
	ready.Store(true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitForSync: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitForSync did not return once every handler had synced")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	never, _ := (&Trigger{}).SourceAfter(func() bool { return false }).(source.SyncingSource)
	if err := never.WaitForSync(ctx); err == nil {
		t.Error("WaitForSync returned no error for handlers that never synced")
	}
}
