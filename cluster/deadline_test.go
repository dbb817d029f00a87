package cluster

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRequestClient: against a member that accepts requests and never
// answers, each request ends at its deadline, and no more than the bound
// are ever waiting on it: one more fails at once. Slots come back.
func TestRequestClient(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	answering := false
	arrived := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := answering
		mu.Unlock()
		arrived <- struct{}{}
		if ok {
			_, _ = w.Write([]byte("ok"))
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	const timeout, inFlight = 500 * time.Millisecond, 2
	c := requestClient(srv.Client(), timeout, inFlight)
	errs := make(chan error, inFlight)
	for range inFlight {
		go func() {
			resp, err := c.Get(srv.URL)
			if err == nil {
				_ = resp.Body.Close()
			}
			errs <- err
		}()
	}
	// Both slots taken (the member holds both requests): one more fails
	// at once, without waiting for them.
	for range inFlight {
		<-arrived
	}
	start := time.Now()
	resp, err := c.Get(srv.URL)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("a request beyond the bound got an answer from a member that never answers")
	}
	if !strings.Contains(err.Error(), errMemberBusy) {
		t.Errorf("the request beyond the bound failed with %v, want %q", err, errMemberBusy)
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("the request beyond the bound waited %s before failing", d)
	}
	for range inFlight {
		select {
		case err := <-errs:
			if err == nil {
				t.Error("a request to a member that never answers succeeded")
			}
		case <-time.After(10 * timeout):
			t.Fatalf("a request outlived its %s deadline by far", timeout)
		}
	}
	// The slots are free again once the member answers.
	mu.Lock()
	answering = true
	mu.Unlock()
	for i := range 2 * inFlight {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatalf("request %d after the member recovered: %v", i, err)
		}
		<-arrived
		_ = resp.Body.Close()
	}
}
