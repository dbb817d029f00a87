//go:build unix && !linux

package local

import "syscall"

// sysProcAttr starts a child in a process group of its own. Only Linux has
// a parent death signal: here a child outlives a program that is killed
// (SIGKILL) rather than stopped.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
