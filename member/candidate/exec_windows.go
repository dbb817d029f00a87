package candidate

import "errors"

// execv: the candidate scheduler runs on Linux; Windows builds the CLI only.
func execv(string, []string, []string) error {
	return errors.New("the candidate scheduler runs on Linux only")
}
