package bookmarks

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
)

// What the bookmark commands read of an archive's x_bookmarks.

// ArchivedPost is one x_bookmarks row of an archive, as the bookmark
// commands see it.
type ArchivedPost struct {
	UserID, PostID string
	FirstSeenAt    time.Time
	// FoundPosition is the post's place in the list when it was found; -1
	// in files written before the column existed.
	FoundPosition int64
	// Missing says what the row lacks of the fields the spec asks for; ""
	// when it holds them all (see Completeness).
	Missing string
}

// alwaysPresent are the tweet fields X returns for every post when they
// are asked for: a row without one of them was not read with it. (The
// others — entities, attachments, note_tweet, referenced_tweets, geo, ... —
// are absent from posts that have none, so a row cannot show it lacks them.)
var alwaysPresent = []string{"created_at", "author_id", "conversation_id", "public_metrics", "edit_history_tweet_ids"}

// Completeness is what a row of x_bookmarks must hold for its post to count
// as archived with all its fields: the post's JSON (the `post` column) with
// its id and text and every post field the request asks for that X returns
// for every post, and, when the request expands author_id, the author.
type Completeness struct {
	fields []string
	author bool
}

// NewCompleteness is the completeness of the fields of a request (the
// spec's RequestFields).
func NewCompleteness(f spec.Fields) Completeness {
	c := Completeness{fields: []string{"id", "text"}}
	for _, name := range alwaysPresent {
		if slices.Contains(f.TweetFields, name) {
			c.fields = append(c.fields, name)
		}
	}
	c.author = slices.Contains(f.Expansions, "author_id")
	return c
}

// missing says what a row lacks: post is the `post` column's JSON (nil if
// null), hasAuthor whether the `author` column is not null.
func (c Completeness) missing(postID string, post []byte, hasAuthor bool) string {
	if post == nil {
		return "the post's JSON (column post) is null"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(post, &obj); err != nil {
		return "the post's JSON (column post) is not a JSON object"
	}
	var id string
	if json.Unmarshal(obj["id"], &id) != nil || id != postID {
		return "the post's JSON (column post) is of another post"
	}
	for _, f := range c.fields {
		if _, ok := obj[f]; !ok {
			return "the post's JSON (column post) has no " + f
		}
	}
	if c.author {
		var authorID string
		if json.Unmarshal(obj["author_id"], &authorID) == nil && authorID != "" && !hasAuthor {
			return "the author (column author), which the spec asks for, is null"
		}
	}
	return ""
}

// ReadBookmarks reads the x_bookmarks rows of an archive that keep says to
// keep, with what each lacks of c.
func ReadBookmarks(dir string, c Completeness, keep func(userID, postID string) bool) ([]ArchivedPost, error) {
	snap, err := archive.OpenSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	var out []ArchivedPost
	columns := []string{"user_id", "post_id", "first_seen_at", "found_position", "post", "author"}
	err = snap.Read(resources.BookmarksTable, columns, func(rec arrow.RecordBatch) error {
		users, uok := archive.Column[*array.String](rec, "user_id")
		posts, pok := archive.Column[*array.String](rec, "post_id")
		seen, sok := archive.Column[*array.Timestamp](rec, "first_seen_at")
		json, jok := archive.Column[*array.String](rec, "post")
		if !uok || !pok || !sok || !jok {
			return errors.New("user_id, post_id, first_seen_at or post is missing or of another type")
		}
		pos, hasPos := archive.Column[*array.Int64](rec, "found_position")
		author, hasAuthor := archive.Column[arrow.Array](rec, "author")
		for i := range int(rec.NumRows()) {
			uid, pid := users.Value(i), posts.Value(i)
			if !keep(uid, pid) {
				continue
			}
			p := ArchivedPost{UserID: uid, PostID: pid, FirstSeenAt: seen.Value(i).ToTime(arrow.Microsecond), FoundPosition: -1}
			if hasPos && pos.IsValid(i) {
				p.FoundPosition = pos.Value(i)
			}
			var post []byte
			if json.IsValid(i) {
				post = []byte(json.Value(i))
			}
			p.Missing = c.missing(pid, post, hasAuthor && author.IsValid(i))
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
