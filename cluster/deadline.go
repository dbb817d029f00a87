package cluster

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// errMemberBusy is what a request to a member gets at once when the
// member already has as many requests in flight as it may.
const errMemberBusy = "the member cluster already has as many requests in flight as placer allows it: it answers slowly or not at all"

// BusyError is what a request to a member gets at once, without being
// sent, when the member already has as many requests in flight as placer
// allows it. It is not a failure of the member: the caller waits for a
// free slot (WhenFree) rather than retrying on a backoff.
type BusyError struct{ slots *Slots }

func (e *BusyError) Error() string { return errMemberBusy }

// WhenFree calls wake once: at once if the member has a request slot
// free now; otherwise when a request in flight ends and key is first in
// line, or when none is in flight any more. A key already in line keeps
// its place and its first wake; a later one is dropped. A key woken some
// other way meanwhile stays in line, and its wake is one pass more. A key
// woken from the line a moment ago that finds no slot free again (another
// pass took the slot first) comes back first in line, not last: a pass
// that needs several requests is not starved by those that need one.
func (e *BusyError) WhenFree(key any, wake func()) { e.slots.whenFree(key, wake) }

// WhenFree reports whether err is (or wraps) a BusyError; if it is, wake
// is called once the member has a request slot free (BusyError.WhenFree).
func WhenFree(err error, key any, wake func()) bool {
	var busy *BusyError
	if !errors.As(err, &busy) {
		return false
	}
	busy.WhenFree(key, wake)
	return true
}

// Slots bound the requests in flight to one member, and wake those that
// found none free, in line: one waiter per request that ends, every
// waiter once none is in flight (one that asks while a slot is free is
// woken at once, ahead of the line) (a woken waiter
// that sends nothing leaves its slot to no one, so no waiter outlives the
// last request).
type Slots struct {
	mu       sync.Mutex
	max      int
	inFlight int
	waiting  []waiter
	waits    map[any]bool
	// woken are the keys the line woke, and when: back within
	// wokenFirst, one goes first in line.
	woken map[any]time.Time
	now   func() time.Time
	// closed: the connection is gone; whoever asks is woken at once (it
	// goes on with the connection's replacement, if any).
	closed bool
}

// wokenFirst is how long after its wake a key that finds no slot free is
// still the one the line woke (its pass came back busy), rather than a
// pass of a later change.
const wokenFirst = 10 * time.Second

type waiter struct {
	key  any
	wake func()
}

// NewSlots returns n request slots.
func NewSlots(n int) *Slots { return &Slots{max: n, now: time.Now} }

// Take takes a slot, if one is free.
func (s *Slots) Take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight >= s.max {
		return false
	}
	s.inFlight++
	return true
}

// Busy is the error of a request that found no slot free.
func (s *Slots) Busy() *BusyError { return &BusyError{slots: s} }

// Give frees a slot taken, and wakes who waits for one.
func (s *Slots) Give() {
	s.mu.Lock()
	s.inFlight--
	wake := s.waiting
	if s.inFlight > 0 && len(wake) > 1 {
		wake = wake[:1]
	}
	s.waiting = slices.Clone(s.waiting[len(wake):])
	if len(wake) > 0 {
		// Only when the line wakes someone: most requests end with no
		// one waiting, and pay nothing for it.
		now := s.now()
		maps.DeleteFunc(s.woken, func(_ any, at time.Time) bool { return now.Sub(at) > wokenFirst })
		if s.woken == nil {
			s.woken = map[any]time.Time{}
		}
		for _, w := range wake {
			delete(s.waits, w.key)
			s.woken[w.key] = now
		}
	}
	s.mu.Unlock()
	for _, w := range wake {
		w.wake()
	}
}

// wakeAll wakes every waiter: the slots' connection is closed.
func (s *Slots) wakeAll() {
	s.mu.Lock()
	wake := s.waiting
	s.waiting, s.waits, s.woken, s.closed = nil, nil, nil, true
	s.mu.Unlock()
	for _, w := range wake {
		w.wake()
	}
}

func (s *Slots) whenFree(key any, wake func()) {
	s.mu.Lock()
	if s.inFlight < s.max || s.closed {
		s.mu.Unlock()
		wake()
		return
	}
	if !s.waits[key] {
		if s.waits == nil {
			s.waits = map[any]bool{}
		}
		s.waits[key] = true
		w := waiter{key: key, wake: wake}
		if at, ok := s.woken[key]; ok && s.now().Sub(at) <= wokenFirst {
			// Woken a moment ago, and beaten to the slot.
			s.waiting = slices.Insert(s.waiting, 0, w)
		} else {
			s.waiting = append(s.waiting, w)
		}
		delete(s.woken, key)
	}
	s.mu.Unlock()
}

// boundedTransport lets at most its slots' requests to one member be in
// flight; one more fails at once (BusyError) rather than waiting. With the
// request deadline, a member that accepts connections and never answers
// holds at most that many of the manager's workers, each for at most the
// deadline (design §4.9): the others go on with the healthy members.
type boundedTransport struct {
	next  http.RoundTripper
	slots *Slots
}

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !b.slots.Take() {
		return nil, b.slots.Busy()
	}
	sent := false
	defer func() {
		if !sent {
			// A panic below (caught by the controller's recovery) must
			// not keep the slot for good.
			b.slots.Give()
		}
	}()
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	sent = true
	// The slot is the response's until its body is read and closed.
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: b.slots.Give}
	return resp, nil
}

// releasingBody frees its slot once closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (r *releasingBody) Close() error {
	err := r.ReadCloser.Close()
	r.once.Do(r.release)
	return err
}

// requestClient returns the client for a member's requests (not its
// watches): every request has a deadline, and at most inFlight are in
// flight at once.
func requestClient(shared *http.Client, timeout time.Duration, inFlight int) *http.Client {
	return &http.Client{
		Transport: &boundedTransport{next: shared.Transport, slots: NewSlots(inFlight)},
		Timeout:   timeout,
	}
}
