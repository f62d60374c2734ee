// Package walktest tests the walk's stop rule on lists that change the ways
// users change them. It has an in-memory bookmark list that behaves as the
// document says (newest first, position tokens, saves and removals at any
// time, also between two pages of a walk), a generator of seeded scenarios,
// and an oracle that says after every sync which posts the archive may lack,
// and why — only the cases docs/walk.md names. walk's property test runs it
// on thousands of scenarios in every `go test ./...`; test/cmd/stopsweep runs
// many more and prints how often each case loses a post.
package walktest

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/cq-source-x/cq-source-x/walk"
)

// List is a newest-first bookmark list with position tokens (document
// Parts 2-4): a token is the offset of the next page, so a change above the
// read position between two pages shifts what the next page returns.
type List struct {
	ids []string

	// Requests and Billed count the API's work.
	Requests, Billed int

	walking bool
	// Between is called before every request of a walk but its first: the
	// list moving between two pages.
	Between func()
	// boundary is the number of posts above the walk's read position: it
	// moves as the list changes above it.
	boundary int
	// served are the posts returned to the walk, in order, repeats
	// included; skipped the posts a page boundary passed over; savedDuring
	// the posts saved while the walk ran.
	served, skipped, savedDuring []string
	// removedAbove counts the removals above the read position.
	removedAbove int
}

// NewList returns a list of n posts with ids first, first+1, ... (newest
// first: the last id is at the top).
func NewList(n int, first int) *List {
	l := &List{}
	for i := range n {
		l.ids = append(l.ids, strconv.Itoa(first+n-1-i))
	}
	return l
}

// IDs returns the list, newest first (a copy).
func (l *List) IDs() []string { return slices.Clone(l.ids) }

// Len is the list's length.
func (l *List) Len() int { return len(l.ids) }

// At returns the i-th post from the top.
func (l *List) At(i int) string { return l.ids[i] }

// Index returns the position of id from the top, or -1.
func (l *List) Index(id string) int { return slices.Index(l.ids, id) }

// Save bookmarks id: it goes to the top, from wherever it was.
func (l *List) Save(id string) {
	i := l.Index(id)
	if i >= 0 {
		l.ids = slices.Delete(l.ids, i, i+1)
	}
	l.ids = slices.Insert(l.ids, 0, id)
	if l.walking {
		l.savedDuring = append(l.savedDuring, id)
		if i < 0 || i >= l.boundary {
			l.boundary++ // one more post above the read position
		}
	}
}

// Remove removes id; the posts below it move up. It reports whether id was
// bookmarked.
func (l *List) Remove(id string) bool {
	i := l.Index(id)
	if i < 0 {
		return false
	}
	l.ids = slices.Delete(l.ids, i, i+1)
	if l.walking && i < l.boundary {
		l.boundary--
		l.removedAbove++
	}
	return true
}

// BeginWalk starts recording a walk: what it is served, what its page
// boundaries skip, what is saved while it runs.
func (l *List) BeginWalk() {
	l.walking, l.boundary = true, 0
	l.served, l.skipped, l.savedDuring, l.removedAbove = nil, nil, nil, 0
}

// EndWalk stops recording. Served, Skipped and SavedDuring keep the walk's
// record until the next BeginWalk.
func (l *List) EndWalk() { l.walking = false }

// Served returns the posts returned to the last walk, in order, repeats
// included.
func (l *List) Served() []string { return l.served }

// Skipped returns the posts the last walk's page boundaries passed over:
// each was below the read position when a removal above it pulled it up
// past the next page's start.
func (l *List) Skipped() []string { return l.skipped }

// RemovedAbove is the number of removals, while the last walk ran, of posts
// above its read position: each pulls the list up one place.
func (l *List) RemovedAbove() int { return l.removedAbove }

// SavedDuring returns the posts saved while the last walk ran.
func (l *List) SavedDuring() []string { return l.savedDuring }

// Fetch serves one page, as the API does.
func (l *List) Fetch(_ context.Context, maxResults int, token string) (walk.Page[string], error) {
	if maxResults < walk.MinPageSize || maxResults > walk.APIMaxPage {
		return walk.Page[string]{}, fmt.Errorf("max_results %d out of range", maxResults)
	}
	off := 0
	if token != "" {
		var err error
		if off, err = strconv.Atoi(token); err != nil {
			return walk.Page[string]{}, fmt.Errorf("token %q is not one this list gave", token)
		}
		if l.walking && l.Between != nil {
			l.Between()
		}
	}
	l.Requests++
	off = min(off, len(l.ids))
	if l.walking && off > l.boundary {
		l.skipped = append(l.skipped, l.ids[l.boundary:off]...)
	}
	end := min(off+maxResults, len(l.ids))
	page := walk.Page[string]{Items: slices.Clone(l.ids[off:end])}
	if end < len(l.ids) {
		page.Next = strconv.Itoa(end)
	}
	l.Billed += len(page.Items)
	if l.walking {
		l.served = append(l.served, page.Items...)
		l.boundary = end
	}
	return page, nil
}
