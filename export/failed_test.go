package export

import "fmt"

// Failed lists the accounts that failed, each as an error naming it.
func (r *Result) Failed() (out []error) {
	for _, s := range r.sessions {
		if err := sessionErr(s); err != nil {
			out = append(out, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	return out
}
