package export

import (
	"fmt"

	"github.com/cq-source-x/cq-source-x/account"
)

// Failed lists the accounts that failed, each as an error naming it.
func (r *Result) Failed() (out []error) {
	for _, s := range r.sessions {
		if err := sessionErr(s); err != nil {
			out = append(out, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	return out
}

func sessionErr(s *account.Session) error {
	if s.Err != nil {
		return s.Err
	}
	return s.Report().Err()
}
