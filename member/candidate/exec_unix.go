//go:build !windows

package candidate

import "syscall"

// execv replaces this process by path, run with args and env.
func execv(path string, args, env []string) error {
	return syscall.Exec(path, args, env)
}
