package plural

import "testing"

// A list of names shows the first ones and counts the rest.
func TestSomeShowsTheFirstNamesAndCountsTheRest(t *testing.T) {
	for _, c := range []struct {
		names []string
		shown int
		want  string
	}{
		{[]string{"a"}, 1, "a"},
		{[]string{"a", "b"}, 1, "a and 1 more"},
		{[]string{"a", "b", "c", "d"}, 4, "a, b, c, d"},
		{[]string{"a", "b", "c", "d", "e", "f"}, 4, "a, b, c, d and 2 more"},
	} {
		if got := Some(c.names, c.shown); got != c.want {
			t.Errorf("Some(%q, %d) = %q, want %q", c.names, c.shown, got, c.want)
		}
	}
}
