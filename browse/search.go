package browse

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A search scans the bookmarks' lower-cased text in memory, laid out in one
// string: it answers within the page's budget on an archive of 100,000
// bookmarks (docs/benchmarks.md, "Browse") with no index to build, keep
// or ship.

// query is what a page asks for: /?q=WORDS&account=ID&folder=ID&from=DATE&to=DATE&media=1&page=N.
type query struct {
	Q, Account, Folder, From, To string
	Media                        bool
	Page                         int // from 1

	words    []string
	from, to time.Time // to: the end of its day
}

const perPage = 50

// dateLayout is the layout of the dates of from and to, in the machine's
// time zone, as the page shows dates.
const dateLayout = "2006-01-02"

// parseQuery reads a page's query; a value that cannot be read is an
// error naming it.
func parseQuery(v url.Values) (query, error) {
	q := query{Q: strings.TrimSpace(v.Get("q")), Account: v.Get("account"), Folder: v.Get("folder"),
		From: v.Get("from"), To: v.Get("to"), Media: v.Get("media") != "", Page: 1}
	for _, w := range strings.Fields(strings.ToLower(q.Q)) {
		if w = strings.TrimPrefix(w, "@"); w != "" { // @name: a username, or a mention in the text
			q.words = append(q.words, w)
		}
	}
	var err error
	if q.From != "" {
		if q.from, err = time.ParseInLocation(dateLayout, q.From, time.Local); err != nil {
			return q, fmt.Errorf("from=%s: want a date as YYYY-MM-DD", q.From)
		}
	}
	if q.To != "" {
		if q.to, err = time.ParseInLocation(dateLayout, q.To, time.Local); err != nil {
			return q, fmt.Errorf("to=%s: want a date as YYYY-MM-DD", q.To)
		}
		q.to = q.to.AddDate(0, 0, 1)
	}
	if p := v.Get("page"); p != "" {
		if q.Page, err = strconv.Atoi(p); err != nil || q.Page < 1 {
			return q, fmt.Errorf("page=%s: want a page number from 1", p)
		}
	}
	return q, nil
}

// filtered says whether q asks for fewer than all the bookmarks.
func (q query) filtered() bool {
	return len(q.words) > 0 || q.Account != "" || q.Folder != "" || q.Media || !q.from.IsZero() || !q.to.IsZero()
}

// matches says whether the i-th bookmark is one q asks for, as
// docs/browse.md#search says.
func (l *library) matches(q query, i int) bool {
	b := l.bookmarks[i]
	switch {
	case q.Account != "" && b.UserID != q.Account,
		q.Folder != "" && !slices.Contains(b.folderIDs, q.Folder),
		q.Media && len(b.Media) == 0,
		!q.from.IsZero() && b.Created.Before(q.from),
		!q.to.IsZero() && !b.Created.Before(q.to):
		return false
	}
	text := l.text[l.starts[i]:l.starts[i+1]]
	for _, w := range q.words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// search returns the bookmarks q asks for, newest bookmarked first. With
// words, it looks for the longest in the text of all the bookmarks at once,
// and checks the rest in those that hold it.
func (l *library) search(q query) []*bookmark {
	if !q.filtered() {
		return l.bookmarks
	}
	var found []*bookmark
	longest := "" // without words: found at the start of every bookmark's text
	if len(q.words) > 0 {
		longest = slices.MaxFunc(q.words, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	}
	for i := 0; i < len(l.bookmarks); i++ {
		hit := strings.Index(l.text[l.starts[i]:], longest)
		if hit < 0 {
			break
		}
		for hit += l.starts[i]; l.starts[i+1] <= hit; i++ { // to the bookmark whose text holds it
		}
		if l.matches(q, i) {
			found = append(found, l.bookmarks[i])
		}
	}
	return found
}

// with is the URL of q with one parameter changed ("" removes it).
func (q query) with(name, value string) string {
	v := url.Values{}
	for _, p := range [][2]string{{"q", q.Q}, {"account", q.Account}, {"folder", q.Folder}, {"from", q.From}, {"to", q.To}, {"media", map[bool]string{true: "1"}[q.Media]}, {"page", strconv.Itoa(q.Page)}} {
		if p[0] == name {
			p[1] = value
		}
		if p[1] != "" && !(p[0] == "page" && p[1] == "1") {
			v.Set(p[0], p[1])
		}
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}
