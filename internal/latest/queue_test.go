package latest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestQueue: the latest value per key is applied, a failed one is retried
// unless a newer one came, and a key is never applied twice at once.
func TestQueue(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var applied []string
	fail := map[string]bool{"b1": true}
	q := New(1, func(_ context.Context, key string, v string) bool {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, key+"="+v)
		if fail[v] {
			delete(fail, v)
			return true
		}
		return false
	})
	q.Set("a", "a1")
	q.Set("a", "a2") // replaces a1, not applied yet
	q.Set("b", "b1")
	for q.Len() > 0 {
		q.ApplyNext(ctx)
	}
	// b1 failed once: retried after its backoff.
	q.ApplyNext(ctx)
	want := []string{"a=a2", "b=b1", "b=b1"}
	if len(applied) != len(want) {
		t.Fatalf("applied %v, want %v", applied, want)
	}
	for i := range want {
		if applied[i] != want[i] {
			t.Fatalf("applied %v, want %v", applied, want)
		}
	}

	// A failed value is not retried once a newer one is set.
	fail["c1"] = true
	applied = nil
	q = New(1, func(_ context.Context, key string, v string) bool {
		applied = append(applied, key+"="+v)
		if fail[v] {
			delete(fail, v)
			q.Set(key, "c2") // set while c1 is being applied
			return true
		}
		return false
	})
	q.Set("c", "c1")
	q.ApplyNext(ctx)
	q.ApplyNext(ctx)
	if len(applied) != 2 || applied[1] != "c=c2" {
		t.Fatalf("applied %v, want [c=c1 c=c2]", applied)
	}
	// The failed c1 is not retried: c2 replaced it. What comes back after
	// the failure's backoff (5 ms) is ready by now, and is applied here.
	time.Sleep(50 * time.Millisecond)
	for q.Len() > 0 {
		q.ApplyNext(ctx)
	}
	if len(applied) != 2 {
		t.Errorf("applied %v after c2, want [c=c1 c=c2]: the failed c1 was retried", applied)
	}
}
