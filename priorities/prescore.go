package priorities

import "github.com/placer-dev/placer/scheduler"

// errNoPreScore is returned by a Score whose PreScore did not run: the
// framework runs both for a plugin in a profile, so it is a programming
// error. A new one each time: the framework names its plugin on it, and
// cycles run on several goroutines.
func errNoPreScore() *scheduler.Status {
	return scheduler.NewStatus(scheduler.Error, "PreScore state is missing")
}
