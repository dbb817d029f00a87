package config_test

import (
	"testing"
	"time"
)

// untilRefused tries until the API server refuses (a policy takes effect a
// moment after it is created), for a minute at most, and returns the
// refusal; undo takes back what each try let through.
func untilRefused(t *testing.T, try func() error, undo func()) error {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := try(); err != nil {
			return err
		}
		if undo != nil {
			undo()
		}
	}
	return nil
}
