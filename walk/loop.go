package walk

import (
	"errors"
	"fmt"

	"github.com/cq-source-x/cq-source-x/ids"
)

// ErrLoop is returned (wrapped) when the API leads a walk back to posts it
// has already read: a next_token that leads to a page already read would
// have the walk bill the same posts again and again, without end.
var ErrLoop = errors.New("the API led the walk back to posts it had already read")

// loopCheck stops a walk the API leads in a circle, before it bills the
// same posts again: a token sent twice (tokens encode a position, which
// only moves down), or pages in a row of nothing but posts read before,
// more than maxShift of them (the list shifting down between requests
// shows a few such pages, docs/walk.md). It remembers every post read
// (posts): a page that leads back to the top of a long walk is seen too,
// and the walk tells every post it reads again.
type loopCheck struct {
	sent     map[string]int // token → the page it was sent for
	posts    ids.Set
	repeated int // posts in the pages in a row of nothing but posts read before
	from     int // the first of those pages
}

const maxShift = 20

// send records that token is sent for page page (1-based), or fails when it
// was sent before. returned is the posts the walk has been sent so far.
func (l *loopCheck) send(token string, page, returned int) error {
	if token == "" {
		return nil
	}
	if earlier, ok := l.sent[token]; ok {
		return fmt.Errorf("%w: the next_token of page %d is the one that asked for page %d; stopped after %s, before reading the same pages again without end%s",
			ErrLoop, page-1, earlier, l.postsRead(returned), loopHint)
	}
	l.sent[token] = page
	return nil
}

// read checks page page (1-based), whose n posts the walk has added to
// posts, repeats of them read before: it fails when the page and those
// before it in a row hold nothing but posts read before, more than maxShift
// of them.
func (l *loopCheck) read(n, repeats, page, returned int) error {
	if n == 0 || repeats < n {
		l.repeated = 0
		return nil
	}
	if l.repeated == 0 {
		l.from = page
	}
	if l.repeated += n; l.repeated <= maxShift {
		return nil
	}
	pages := fmt.Sprintf("page %d", page)
	if l.from < page {
		pages = fmt.Sprintf("pages %d to %d", l.from, page)
	}
	return fmt.Errorf("%w: %s held nothing but posts read earlier in this walk (%d of them, more than the list could have moved down between requests); stopped after %s, before reading the same pages again without end%s",
		ErrLoop, pages, l.repeated, l.postsRead(returned), loopHint)
}

// postsRead says how many posts the walk was sent, and how many distinct:
// X bills a post once per UTC day, so the walk was billed for the distinct
// ones at most (x_api_usage has the figure), not for every post read.
func (l *loopCheck) postsRead(returned int) string {
	return fmt.Sprintf("%d posts read (%d distinct)", returned, l.posts.Len())
}

const loopHint = " (the server at base_url does not page as the X API does; the next sync starts again from the top)"
