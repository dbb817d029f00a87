package cluster

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// errMemberBusy is what a request to a member gets at once when the
// member already has as many requests in flight as it may.
const errMemberBusy = "the member cluster already has as many requests in flight as placer allows it: it answers slowly or not at all"

// boundedTransport lets at most cap(slots) requests to one member be in
// flight; one more fails at once rather than waiting. With the request
// deadline, a member that accepts connections and never answers holds at
// most that many of the manager's workers, each for at most the deadline
// (design §4.9): the others go on with the healthy members.
type boundedTransport struct {
	next  http.RoundTripper
	slots chan struct{}
}

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case b.slots <- struct{}{}:
	default:
		return nil, errors.New(errMemberBusy)
	}
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		<-b.slots
		return nil, err
	}
	// The slot is the response's until its body is read and closed.
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() { <-b.slots }}
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
		Transport: &boundedTransport{next: shared.Transport, slots: make(chan struct{}, inFlight)},
		Timeout:   timeout,
	}
}
