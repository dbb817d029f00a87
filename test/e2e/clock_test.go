package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clockLink is a way to a member whose clock is off, as the manager sees
// it: an HTTPS proxy, serving the member API server's own certificate,
// that shifts every timestamp in the member's JSON answers (watches
// included) by an offset the test sets. The OS clock cannot be moved per
// process; what the manager reads of a member is all its clock can touch.
type clockLink struct {
	// Addr is the proxy's https address, for the member's kubeconfig.
	Addr   string
	offset atomic.Int64
	// used is closed at the first request through the link.
	used chan struct{}
	once sync.Once
}

// newClockLink starts a clock link to the member's API server, which it
// reaches with kubeconfig's credentials (the manager's: the requests'
// impersonation headers pass through); the test's cleanup closes it.
func newClockLink(t *testing.T, m *member, kubeconfig []byte) *clockLink {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	to, err := url.Parse(m.target.Server())
	if err != nil {
		t.Fatal(err)
	}
	l := &clockLink{used: make(chan struct{})}
	p := httputil.NewSingleHostReverseProxy(to)
	p.Transport = rt
	p.FlushInterval = -1
	p.ModifyResponse = func(r *http.Response) error {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			r.Body = &shifted{body: r.Body, in: bufio.NewReader(r.Body), by: func() time.Duration { return time.Duration(l.offset.Load()) }}
			r.Header.Del("Content-Length")
			r.ContentLength = -1
		}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.once.Do(func() { close(l.used) })
		p.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	dir := m.target.Dir()
	go func() { _ = srv.ServeTLS(ln, filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")) }()
	t.Cleanup(func() { _ = srv.Close() })
	l.Addr = "https://" + ln.Addr().String()
	return l
}

// timestamp matches an RFC 3339 time in UTC as the API writes them.
var timestamp = regexp.MustCompile(`"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z"`)

// shifted moves every timestamp of a JSON body by an offset, a line (a
// watch event) at a time, the offset read at each line (a watch open
// when the test moves the clock follows it).
type shifted struct {
	body io.Closer
	in   *bufio.Reader
	by   func() time.Duration
	out  bytes.Buffer
}

func (s *shifted) Read(p []byte) (int, error) {
	for s.out.Len() == 0 {
		line, err := s.in.ReadBytes('\n')
		by := s.by()
		s.out.Write(timestamp.ReplaceAllFunc(line, func(m []byte) []byte {
			v := string(m[1 : len(m)-1])
			layout := time.RFC3339
			if strings.Contains(v, ".") {
				layout = time.RFC3339Nano
			}
			at, perr := time.Parse(layout, v)
			if perr != nil {
				return m
			}
			return []byte(`"` + at.Add(by).UTC().Format(layout) + `"`)
		}))
		if err != nil {
			if s.out.Len() > 0 && errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	return s.out.Read(p)
}

func (s *shifted) Close() error { return s.body.Close() }

// TestShifted: every timestamp moves by the offset, nothing else changes,
// and a body without a final newline (a plain answer) is read whole.
func TestShifted(t *testing.T) {
	in := `{"metadata":{"creationTimestamp":"2026-11-26T10:00:00Z","name":"a 2026"}}` + "\n" + `{"time":"2026-11-26T10:00:00.123456Z"}`
	s := &shifted{body: io.NopCloser(nil), in: bufio.NewReader(strings.NewReader(in)), by: func() time.Duration { return -10 * time.Minute }}
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"creationTimestamp":"2026-11-26T09:50:00Z","name":"a 2026"}}` + "\n" + `{"time":"2026-11-26T09:50:00.123456Z"}`
	if string(got) != want {
		t.Errorf("shifted:\n%s\nwant:\n%s", got, want)
	}
}
