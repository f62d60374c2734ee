package suggest

import "testing"

// Insertions, deletions, substitutions and swaps of two neighbours count
// one each.
func TestDistanceCountsEachTypoOnce(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"json", "json", 0}, {"jsno", "json", 1}, {"jso", "json", 1}, {"jsonx", "json", 1}, {"jzon", "json", 1}, {"", "abc", 3}, {"café", "cafe", 1}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// A misspelling finds the name meant; an unrelated word finds none.
func TestPhraseNamesTheCandidateMeant(t *testing.T) {
	names := []string{"accounts", "base_url", "compliance"}
	if got := Phrase("acounts", names); got != ` (did you mean "accounts"?)` {
		t.Errorf("acounts: %q", got)
	}
	if got := Phrase("timeout", names); got != "" {
		t.Errorf("timeout: %q", got)
	}
}
