package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
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

// TestBusyWakes: through client-go, as a member's client meets it, a request
// beyond the bound is a BusyError, told apart from the member's own
// answers. Who waits for a slot is woken once one frees: one waiter per
// request that ends, in the order they came, and every one once nothing
// is in flight; each waiter once however often it asks; and at once if a
// slot is free already.
func TestBusyWakes(t *testing.T) {
	hold := make(chan struct{})
	arrived := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(r.URL.Path)
		arrived <- name
		if name == "missing" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		<-hold
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":%q}}`, name)
	}))
	defer srv.Close()

	const inFlight = 2
	cs, err := kubernetes.NewForConfigAndClient(&rest.Config{Host: srv.URL}, requestClient(srv.Client(), 10*time.Second, inFlight))
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) error {
		_, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		return err
	}

	// A member's own refusal is not busy.
	if err := get("missing"); err == nil || WhenFree(err, "missing", func() { t.Error("woken by a 404") }) {
		t.Fatalf("a 404: %v; want an error that is not busy", err)
	}
	<-arrived

	held := make(chan error, inFlight)
	for i := range inFlight {
		go func() { held <- get(fmt.Sprintf("held-%d", i)) }()
		<-arrived
	}
	woken := make(chan string, 4)
	for _, name := range []string{"first", "second", "third"} {
		if err := get("one-more"); !WhenFree(err, name, func() { woken <- name }) {
			t.Fatalf("a request beyond the bound: %v, want a BusyError", err)
		}
	}
	// One waiting already is not added again: it is woken once.
	if !WhenFree(get("one-more"), "first", func() { woken <- "first, again" }) {
		t.Fatal("WhenFree refused a BusyError")
	}
	if len(woken) != 0 {
		t.Fatalf("%d woken while every slot is taken", len(woken))
	}
	select {
	case name := <-arrived:
		t.Fatalf("a request beyond the bound reached the member (%s)", name)
	default:
	}

	// One request ends (its body closed before Get returns): one waiter,
	// the first, is woken.
	hold <- struct{}{}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if got := drain(woken); len(got) != 1 || got[0] != "first" {
		t.Fatalf("woken %v after one request ended, want [first]", got)
	}
	// The last request ends: nothing is in flight, so every waiter left
	// is woken.
	close(hold)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if got := drain(woken); len(got) != 2 || got[0] != "second" || got[1] != "third" {
		t.Fatalf("woken %v once nothing was in flight, want [second third]", got)
	}
	// A slot is free: who asks is woken at once.
	busy := NewSlots(1).Busy()
	now := false
	busy.WhenFree("now", func() { now = true })
	if !now {
		t.Error("a waiter was not woken at once though a slot is free")
	}
}

func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// TestWokenGoesFirst: a waiter the line woke whose pass found no slot
// free again (another pass took it first) comes back first in line, not
// last, so that a pass needing several requests to a busy member is not
// starved; one woken long ago is a new waiter.
func TestWokenGoesFirst(t *testing.T) {
	now := time.Unix(0, 0)
	s := NewSlots(2)
	s.now = func() time.Time { return now }
	var woken []string
	wake := func(name string) func() { return func() { woken = append(woken, name) } }
	s.Take()
	s.Take()
	s.whenFree("a", wake("a"))
	s.whenFree("b", wake("b"))
	s.Give()
	if !slices.Equal(woken, []string{"a"}) {
		t.Fatalf("woken %v, want a, first in line", woken)
	}
	// Another pass takes the slot before a's; a finds none free.
	s.Take()
	s.whenFree("a", wake("a"))
	s.Give()
	if !slices.Equal(woken, []string{"a", "a"}) {
		t.Fatalf("woken %v, want a again: beaten to its slot, it goes first", woken)
	}
	// Much later, a is a waiter like any other: behind b.
	s.Take()
	now = now.Add(time.Minute)
	s.whenFree("a", wake("a"))
	s.Give()
	if !slices.Equal(woken, []string{"a", "a", "b"}) {
		t.Fatalf("woken %v, want b: a woken a minute ago waits its turn", woken)
	}
}

// panicky is a transport that panics.
type panicky struct{}

func (panicky) RoundTrip(*http.Request) (*http.Response, error) { panic("a bug below") }

// TestSlotGivenBackOnPanic: a panic under the bounded transport (which a
// controller's recovery catches) gives its slot back.
func TestSlotGivenBackOnPanic(t *testing.T) {
	b := &boundedTransport{next: panicky{}, slots: NewSlots(1)}
	req, err := http.NewRequest(http.MethodGet, "http://member.invalid/", nil)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = b.RoundTrip(req)
	}()
	if !b.slots.Take() {
		t.Error("the slot of a request that panicked is still taken")
	}
}

// TestClosedConnectionWakes: a connection closed (replaced after an
// outage, or its cluster gone) wakes who waits for one of its slots at
// once, not when its requests in flight, hung maybe, reach their deadline;
// and so it wakes one that asks after the close.
func TestClosedConnectionWakes(t *testing.T) {
	hc := requestClient(&http.Client{}, time.Minute, 1)
	slots := hc.Transport.(*boundedTransport).slots
	slots.Take()
	woken := false
	slots.whenFree("a", func() { woken = true })
	c := &Connection{requests: hc, HTTPClient: &http.Client{}, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.close()
	if !woken {
		t.Error("a waiter for a slot of a closed connection is not woken")
	}
	// A pass told busy before the close, asking after it, joins no line
	// that nothing serves: it is woken at once.
	late := false
	slots.whenFree("b", func() { late = true })
	if !late {
		t.Error("a waiter asking after its connection closed is not woken")
	}

	// Nor does it wait for the connection's watches to stop (a watch
	// stopping on a member that does not answer).
	hc = requestClient(&http.Client{}, time.Minute, 1)
	slots = hc.Transport.(*boundedTransport).slots
	slots.Take()
	wake := make(chan struct{})
	slots.whenFree("c", func() { close(wake) })
	stopped := make(chan struct{})
	c = &Connection{requests: hc, HTTPClient: &http.Client{}, done: make(chan struct{}), stopped: stopped}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.close()
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Error("a waiter for a slot of a closed connection is woken only once its watches stop")
	}
	close(stopped)
	<-c.Done()
}

// syncedInformer is a chaperon watch that has listed.
type syncedInformer struct{ crcache.Informer }

func (syncedInformer) HasSynced() bool { return true }

// TestClosedConnectionNotSynced: a connection closed (replaced, or its
// cluster gone) says its watch is not synced, whoever still holds it: its
// cache stopped with the watch, and what it shows is frozen. Before, it
// went on saying synced.
func TestClosedConnectionNotSynced(t *testing.T) {
	c := &Connection{requests: requestClient(&http.Client{}, time.Minute, 1), HTTPClient: &http.Client{}, done: make(chan struct{}), chaperons: syncedInformer{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if !c.Synced() {
		t.Fatal("a connection whose watch listed is not synced")
	}
	c.close()
	if c.Synced() {
		t.Error("a closed connection says its watch is synced")
	}
}
