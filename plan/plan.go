// Package plan decides, once for both outputs, what the archive does with
// the rows of a post X reports: Edits turns the reported posts into edits of
// the tables that hold them (docs/architecture.md#one-plan-two-sinks).
package plan

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Action is what is done to an archived post; the order is their
// strength: a stronger action later goes on from what was applied.
type Action uint8

// The actions.
const (
	Keep Action = iota
	// ScrubGeo removes the post's location (its JSON's geo).
	ScrubGeo
	// Redact removes the post's content; the bookmark's key and dates stay.
	Redact
	// Delete removes the bookmark's row too.
	Delete
)

func (a Action) String() string {
	return [...]string{"keep", "scrub_geo", "redact", "delete"}[a]
}

// Holding is how a table holds posts.
type Holding struct {
	Table string
	// Of is the column of the bookmarked post the row belongs to: its
	// rows go when the bookmark's content goes.
	Of string
	// Holds is the column of the post whose content the row holds when it
	// is not Of's: a post the bookmark quotes, answers or reposts, or the
	// post a media file is attached to. Its rows go when that post's
	// content goes.
	Holds string
	// Keeps are the columns a row keeps when its post is redacted; nil:
	// the row is removed. Only a table whose row is the bookmark itself
	// keeps one.
	Keeps []string
	// Geo is the column of the post's JSON, whose geo a scrub removes.
	Geo string
}

// Reported is an archived post whose action is due.
type Reported struct {
	UserID, PostID string
	Action         Action
	// Bookmarked says the account bookmarked the post; Referenced that
	// its bookmarks quote, answer or repost it. A post can be both.
	Bookmarked, Referenced bool
}

// Op is what an edit does to the rows it matches.
type Op uint8

// The edits' operations: Remove removes the rows, Blank sets every column
// but Keeps (and the SDK's _cq_ columns) to null, Scrub removes the geo of
// the JSON in column Geo.
const (
	Remove Op = iota + 1
	Blank
	Scrub
)

// Edit is what happens to the rows of Table whose user_id is UserID and Column is PostID.
type Edit struct {
	Table  string   `json:"table"`
	UserID string   `json:"user_id"`
	Column string   `json:"column"`
	PostID string   `json:"post_id"`
	Op     Op       `json:"op"`
	Keeps  []string `json:"keeps,omitempty"`
	Geo    string   `json:"geo,omitempty"`
}

// Kept reports whether a Blank edit leaves column's value.
func (e Edit) Kept(column string) bool {
	return slices.Contains(e.Keeps, column) || strings.HasPrefix(column, "_cq_")
}

// Edits are the edits of the tables that the reported posts make.
func Edits(tables []Holding, posts []Reported) []Edit {
	var out []Edit
	for _, p := range posts {
		for _, t := range tables {
			edit := func(column string, op Op) {
				e := Edit{Table: t.Table, UserID: p.UserID, Column: column, PostID: p.PostID, Op: op}
				switch op {
				case Blank:
					e.Keeps = t.Keeps
				case Scrub:
					e.Geo = t.Geo
				}
				out = append(out, e)
			}
			switch {
			case p.Action == Keep:
			case p.Bookmarked && t.Of != "" && p.Action == Redact && t.Keeps != nil:
				edit(t.Of, Blank)
			case p.Bookmarked && t.Of != "" && p.Action >= Redact:
				edit(t.Of, Remove)
			case p.Bookmarked && t.Of != "" && t.Holds == "" && t.Geo != "":
				edit(t.Of, Scrub)
			}
			switch {
			case !p.Referenced || t.Holds == "" || p.Action == Keep:
			case p.Action >= Redact:
				edit(t.Holds, Remove)
			case t.Geo != "":
				edit(t.Holds, Scrub)
			}
		}
	}
	return out
}

// WithoutGeo is a post's JSON without its geo field (raw when it has none).
func WithoutGeo(raw json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if _, ok := obj["geo"]; !ok {
		return raw, nil
	}
	delete(obj, "geo")
	return json.Marshal(obj)
}

// Index finds the edit of a row: the edits by table, column and "user/post".
type Index map[string]map[string]map[string]Edit

func NewIndex(edits []Edit) Index {
	ix := Index{}
	for _, e := range edits {
		if ix[e.Table] == nil {
			ix[e.Table] = map[string]map[string]Edit{}
		}
		if ix[e.Table][e.Column] == nil {
			ix[e.Table][e.Column] = map[string]Edit{}
		}
		ix[e.Table][e.Column][e.UserID+"/"+e.PostID] = e
	}
	return ix
}

// Find is the edit of the row of table of userID whose columns value
// gives ("" for none), and whether there is one. Of two edits that match
// a row, a removal wins.
func (ix Index) Find(table, userID string, value func(column string) string) (Edit, bool) {
	var found Edit
	for column, byKey := range ix[table] { // no edit has an empty post id
		if e, ok := byKey[userID+"/"+value(column)]; ok && (found.Op == 0 || e.Op < found.Op) {
			found = e
		}
	}
	return found, found.Op != 0
}

// Columns are the columns of table that edits match rows by.
func (ix Index) Columns(table string) []string {
	return slices.Sorted(maps.Keys(ix[table]))
}
