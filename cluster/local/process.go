package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// process is one server a local cluster runs, in a process group of its
// own, stopped by its PID. On Linux it is started with a parent death
// signal, so it dies with the test or program that started it even when
// that one is killed (process_linux.go); elsewhere it is stopped when the
// program ends normally.
type process struct {
	name    string
	logFile string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// The parent death signal fires when the thread that started the child
// exits, so every child is started from one thread that never exits.
var (
	spawnOnce sync.Once
	spawnCh   chan func()
)

func onSpawnThread(f func()) {
	spawnOnce.Do(func() {
		spawnCh = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the program
			for f := range spawnCh {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawnCh <- func() { f(); close(done) }
	<-done
}

func startProcess(dir, name, binary string, args ...string) (*process, error) {
	logFile := filepath.Join(dir, name+".log")
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot open log of %s", name)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	onSpawnThread(func() { err = cmd.Start() })
	if err != nil {
		_ = out.Close()
		return nil, errors.Wrapf(err, "cannot start %s", name)
	}
	p := &process{name: name, logFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	return p, nil
}

// PID of the process.
func (p *process) PID() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group led by the process, then SIGKILL
// if it has not ended within the grace period.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	terminateGroup(p.cmd.Process)
	// A frozen process (Freeze) handles SIGTERM once it runs again.
	_ = continueGroup(p.cmd.Process)
	select {
	case <-p.done:
	case <-time.After(grace):
		killGroup(p.cmd.Process)
		<-p.done
	}
}

// note appends a line of the harness's own to the process's log.
func (p *process) note(line string) {
	f, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	_, _ = fmt.Fprintf(f, "local cluster: %s %s\n", p.name, line)
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
	b, err := os.ReadFile(p.logFile)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// failure describes a process that did not come up.
func (p *process) failure(err error) error {
	state := "still running"
	if p.exited() {
		state = fmt.Sprintf("exited: %v", p.err)
	}
	return errors.Errorf("%s (pid %d, %s) did not become ready: %v; log %s ends:\n%s", p.name, p.PID(), state, err, p.logFile, p.logTail(20))
}

// waitFor calls check until it succeeds, the process exits or ctx ends.
func (p *process) waitFor(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	for {
		if err = check(ctx); err == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.failure(err)
		case <-ctx.Done():
			return p.failure(err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, errors.Wrap(err, "cannot find a free port")
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		// The kernel may give a port just closed again: one handed out
		// before may not be listened on yet.
		if !handedOut.ports[p] {
			handedOut.ports[p] = true
			return p, nil
		}
	}
	return 0, errors.New("cannot find a free port not handed out already")
}

// handedOut are the ports freePort gave this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreeAddr returns a loopback address (127.0.0.1:port) whose port nobody
// listens on now, for a server a test or a benchmark starts.
func FreeAddr() (string, error) {
	p, err := freePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + itoa(p), nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// Process is a child process started with Spawn, for components that run
// beside the clusters (placer's manager in end-to-end tests).
type Process struct{ p *process }

// Spawn starts binary as a child that dies with this process, logging to
// dir/name.log. The caller stops it by PID with Stop or Kill.
func Spawn(dir, name, binary string, args ...string) (*Process, error) {
	p, err := startProcess(dir, name, binary, args...)
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// PID of the process.
func (p *Process) PID() int { return p.p.PID() }

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// Stop sends SIGTERM, then SIGKILL after grace, and waits for the end.
func (p *Process) Stop(grace time.Duration) { p.p.stop(grace) }

// Kill sends SIGKILL at once, as a crash would, and waits for the end.
func (p *Process) Kill() {
	if p.p.exited() {
		return
	}
	killGroup(p.p.cmd.Process)
	<-p.p.done
}

// LogTail returns the last lines of the process's log.
func (p *Process) LogTail(lines int) string { return p.p.logTail(lines) }
