package local

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// LineSeen is a writer that notes when a line comes through it: the
// reader of a container's log, or of an attached container, waiting for
// a line the test wrote (AppendUntilSeen).
type LineSeen struct {
	want string
	seen chan struct{}
	once sync.Once
}

// NewLineSeen waits for the line.
func NewLineSeen(line string) *LineSeen {
	return &LineSeen{want: line, seen: make(chan struct{})}
}

func (w *LineSeen) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// AppendUntilSeen writes w's line to every container's log, every 200 ms
// (a stream starts some time after it is asked for), until w has seen it;
// it fails when the stream ends first (done, when not nil, says so) or ctx
// does.
func (c *Cluster) AppendUntilSeen(ctx context.Context, w *LineSeen, done <-chan error) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.seen:
			return nil
		case err := <-done:
			return errors.Errorf("the stream ended before it showed %q: %v", w.want, err)
		case <-ctx.Done():
			return errors.Errorf("the stream never showed %q", w.want)
		case <-tick.C:
			if err := c.AppendContainerLog(w.want); err != nil {
				return err
			}
		}
	}
}
