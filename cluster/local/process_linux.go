package local

import "syscall"

// sysProcAttr starts a child in a process group of its own, killed when
// the thread that started it ends (onSpawnThread keeps that thread alive
// as long as the program).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
