//go:build unix

package local

import (
	"os"
	"syscall"
)

// The signals go to the process group the child leads, so that whatever
// it started itself goes with it.

func terminateGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

func stopGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGSTOP) }

func continueGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGCONT) }
