package shared

// Problem is what keeps an object from being delivered to a member that
// no retry changes: its name is taken by an object placer did not create
// there (or another Workload's), or the member's API server refuses it.
// It is reported, in an Event and the Ready condition, and never retried
// in a hot loop.
type Problem struct{ Reason, Message string }

func (p *Problem) Error() string { return p.Message }

// maxMessage bounds what a member's API server says that placer copies
// into a Workload's status and Events.
const maxMessage = 1024

// Truncate cuts a member's message to maxMessage bytes.
func Truncate(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return msg[:maxMessage] + "…"
}
