package local

import (
	"os"
	"syscall"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Windows has neither process groups signalled by PID nor a parent death
// signal: a child is stopped by its PID alone, and outlives a program that
// is killed rather than stopped.

func sysProcAttr() *syscall.SysProcAttr { return nil }

// terminateGroup ends the process at once: Windows has no SIGTERM to send
// another process.
func terminateGroup(p *os.Process) { _ = p.Kill() }

func killGroup(p *os.Process) { _ = p.Kill() }

func stopGroup(*os.Process) error {
	return errors.New("freezing a process is not supported on Windows")
}

func continueGroup(*os.Process) error { return nil }
