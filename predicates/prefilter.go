package predicates

import "github.com/placer-dev/placer/scheduler"

// errNoPreFilter is returned by a Filter whose PreFilter did not run: the
// framework runs both for a plugin in a profile, so it is a programming
// error. A new one each time: the framework names its plugin on it, and
// cycles run on several goroutines.
func errNoPreFilter() *scheduler.Status {
	return scheduler.NewStatus(scheduler.Error, "PreFilter state is missing")
}
