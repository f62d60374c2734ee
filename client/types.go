package client

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
)

// Operation names one endpoint: the key of limits, budgets and meter rows
// (docs/architecture.md, "Operations and limits").
type Operation = billing.Operation

const (
	OpListBookmarks  Operation = "list_bookmarks"  // GET /2/users/:id/bookmarks
	OpListFolders    Operation = "list_folders"    // GET /2/users/:id/bookmarks/folders
	OpGetFolder      Operation = "get_folder"      // GET /2/users/:id/bookmarks/folders/:folder_id
	OpAddBookmark    Operation = "add_bookmark"    // POST /2/users/:id/bookmarks
	OpRemoveBookmark Operation = "remove_bookmark" // DELETE /2/users/:id/bookmarks/:tweet_id
	OpUsersMe        Operation = "users_me"        // GET /2/users/me
)

// Operations lists every operation, in a fixed order.
func Operations() []Operation {
	return []Operation{OpListBookmarks, OpListFolders, OpGetFolder, OpAddBookmark, OpRemoveBookmark, OpUsersMe,
		OpCreateComplianceJob, OpGetComplianceJob, OpListComplianceJobs, OpUploadComplianceIDs, OpDownloadComplianceResults}
}

// DefaultWindow is the rate-limit window of every operation (document Part 8).
const DefaultWindow = 15 * time.Minute

// DefaultLimits returns the per-user request limits per window (document
// Part 8), users_me's and the compliance jobs' (per app, under user ""): a fresh map.
func DefaultLimits() map[Operation]int {
	return map[Operation]int{
		OpListBookmarks:  180,
		OpListFolders:    50,
		OpGetFolder:      50,
		OpAddBookmark:    50,
		OpRemoveBookmark: 50,
		OpUsersMe:        75,

		OpCreateComplianceJob: complianceLimit,
		OpGetComplianceJob:    complianceLimit,
		OpListComplianceJobs:  complianceLimit,
	}
}

// PageOptions selects a page of a paginated operation.
type PageOptions struct {
	MaxResults      int    // 1..100; 0 omits it (the API's default is 10)
	PaginationToken string // a next_token or previous_token of the same walk; "" for the first page
}

type ListOptions struct {
	PageOptions
	Fields Fields
}

// Fields are the field-selection and expansion parameters (comma-separated lists).
type Fields struct {
	TweetFields []string // tweet.fields
	Expansions  []string // expansions
	UserFields  []string // user.fields
	MediaFields []string // media.fields
	PollFields  []string // poll.fields
	PlaceFields []string // place.fields
}

// Meta is a page's paging information.
type Meta struct {
	ResultCount   int    `json:"result_count"`
	NextToken     string `json:"next_token,omitempty"`
	PreviousToken string `json:"previous_token,omitempty"`
}

// PostPage is one page of ListBookmarks.
type PostPage struct {
	Data     []Post         `json:"data"`
	Includes Includes       `json:"includes"`
	Errors   []PartialError `json:"errors"`
	Meta     Meta           `json:"meta"`
	Expanded Expanded       `json:"-"` // Includes decoded
}

// Post is a post resource: the commonly used fields decoded, and Raw.
type Post struct {
	ID                  string     `json:"id"`
	Text                string     `json:"text"`
	CreatedAt           *time.Time `json:"created_at,omitempty"`
	AuthorID            string     `json:"author_id,omitempty"`
	ConversationID      string     `json:"conversation_id,omitempty"`
	Lang                string     `json:"lang,omitempty"`
	InReplyToUserID     string     `json:"in_reply_to_user_id,omitempty"`
	PossiblySensitive   *bool      `json:"possibly_sensitive,omitempty"`
	EditHistoryTweetIDs []string   `json:"edit_history_tweet_ids,omitempty"`
	// Objects asked for in tweet.fields, kept raw (nil when absent).
	PublicMetrics    json.RawMessage `json:"public_metrics,omitempty"`
	Entities         json.RawMessage `json:"entities,omitempty"`
	ReferencedTweets json.RawMessage `json:"referenced_tweets,omitempty"`
	Attachments      json.RawMessage `json:"attachments,omitempty"`
	NoteTweet        json.RawMessage `json:"note_tweet,omitempty"`
	Article          json.RawMessage `json:"article,omitempty"`
	// What the objects hold, "" or nil when absent: note_tweet.text is the
	// whole text of a post whose Text is cut short at 280 characters.
	MediaKeys        []string        `json:"-"` // attachments.media_keys
	References       []Reference     `json:"-"` // referenced_tweets
	NoteText         string          `json:"-"` // note_tweet.text
	ArticleTitle     string          `json:"-"` // article.title
	ArticleText      string          `json:"-"` // article.plain_text
	ArticleCover     string          `json:"-"` // article.cover_media
	ArticleMediaKeys []string        `json:"-"` // article.media_entities
	Raw              json.RawMessage `json:"-"` // the post object exactly as returned
}

// Reference is one element of a post's referenced_tweets.
type Reference struct {
	Type string `json:"type"` // "quoted", "replied_to" or "retweeted"
	ID   string `json:"id"`
}

// Includes holds the expanded objects of a page, kept raw.
type Includes struct {
	Users  []json.RawMessage `json:"users,omitempty"`
	Media  []json.RawMessage `json:"media,omitempty"`
	Tweets []json.RawMessage `json:"tweets,omitempty"`
	Polls  []json.RawMessage `json:"polls,omitempty"`
	Places []json.RawMessage `json:"places,omitempty"`
}

// Expanded is a page's includes decoded and indexed by id (media by media
// key), the first of two with one id kept.
type Expanded struct {
	Users map[string]*User
	Media map[string]*Media
	Posts map[string]*Post

	userIDs, postIDs []string // every one, repeats included: each is billed
}

// Media is an expanded media object (includes.media).
type Media struct {
	MediaKey        string          `json:"media_key"`
	Type            string          `json:"type"`          // "photo", "video" or "animated_gif"
	URL             string          `json:"url,omitempty"` // photos
	PreviewImageURL string          `json:"preview_image_url,omitempty"`
	AltText         string          `json:"alt_text,omitempty"`
	Width           *int64          `json:"width,omitempty"`
	Height          *int64          `json:"height,omitempty"`
	DurationMS      *int64          `json:"duration_ms,omitempty"`
	Variants        []Variant       `json:"variants,omitempty"` // videos and GIFs
	PublicMetrics   json.RawMessage `json:"public_metrics,omitempty"`
	Raw             json.RawMessage `json:"-"` // the media object exactly as returned
}

// Variant is one playback variant of a video or GIF.
type Variant struct {
	BitRate     *int64 `json:"bit_rate,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	URL         string `json:"url,omitempty"`
}

// PartialError is an element of the "errors" of a 200 (a deleted referenced post, ...).
type PartialError struct {
	Title        string          `json:"title"`
	Detail       string          `json:"detail"`
	Type         string          `json:"type"`
	ResourceType string          `json:"resource_type"`
	ResourceID   string          `json:"resource_id"`
	Parameter    string          `json:"parameter"`
	Value        string          `json:"value"`
	Raw          json.RawMessage `json:"-"`
}

// String is the error on one line: its title and detail, or what it names.
func (e PartialError) String() string {
	var parts []string
	for _, s := range []string{e.Title, e.Detail} {
		if s = oneLine(s, 200); s != "" {
			parts = append(parts, s)
		}
	}
	if e.Detail == "" {
		if e.Parameter != "" {
			parts = append(parts, oneLine(e.Parameter, 40)+"="+oneLine(e.Value, 60))
		} else if e.ResourceID != "" {
			parts = append(parts, oneLine(e.ResourceType+" "+e.ResourceID, 60))
		}
	}
	return strings.Join(parts, ": ")
}

// FolderPage is one page of ListFolders.
type FolderPage struct {
	Data []Folder `json:"data"`
	Meta Meta     `json:"meta"`
}

type Folder struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// FolderPostsPage is one page of GetFolder: post ids only.
type FolderPostsPage struct {
	Data []FolderPost `json:"data"`
	Meta Meta         `json:"meta"`

	counted bool // the page carried meta.result_count
}

// FolderPost is a post in a folder: its id only.
type FolderPost struct {
	ID string `json:"id"`
}

// User is the user behind a token (GET /2/users/me), or an expanded author.
type User struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Username        string          `json:"username"`
	CreatedAt       *time.Time      `json:"created_at,omitempty"`
	Description     string          `json:"description,omitempty"`
	Location        string          `json:"location,omitempty"`
	URL             string          `json:"url,omitempty"`
	ProfileImageURL string          `json:"profile_image_url,omitempty"`
	Protected       *bool           `json:"protected,omitempty"`
	Verified        *bool           `json:"verified,omitempty"`
	VerifiedType    string          `json:"verified_type,omitempty"`
	PublicMetrics   json.RawMessage `json:"public_metrics,omitempty"`
	Raw             json.RawMessage `json:"-"` // the user object exactly as returned
}

// Response is the HTTP response of a call (body read and closed), nil when
// none came, and what the client learnt from it. Errors come with it too.
type Response struct {
	*http.Response
	Operation Operation
	Rate      Rate // from the final response's x-rate-limit-* headers
	// PostsReturned is the posts a page held, expanded ones included: what X
	// billed, before its same-day de-duplication.
	PostsReturned int
	Attempts      int           // HTTP requests sent, retries included
	Waited        time.Duration // rate-limit waits and backoff
	Naming        Naming        // the naming a bookmarks request was made in
}

// Rate is a rate-limit window: from the x-rate-limit-* headers, or the client's budget.
type Rate struct {
	Limit     int
	Remaining int
	Reset     time.Time
}

// parseRate reads the x-rate-limit-* headers; ok: all three are there and well-formed.
func parseRate(h http.Header) (r Rate, ok bool) {
	l, err1 := strconv.Atoi(h.Get("X-Rate-Limit-Limit"))
	rem, err2 := strconv.Atoi(h.Get("X-Rate-Limit-Remaining"))
	reset, err3 := strconv.ParseInt(h.Get("X-Rate-Limit-Reset"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || l < 0 || rem < 0 || reset <= 0 {
		// A lone reset header is still useful on a 429.
		if err3 == nil && reset > 0 {
			return Rate{Reset: time.Unix(reset, 0)}, false
		}
		return Rate{}, false
	}
	return Rate{Limit: l, Remaining: rem, Reset: time.Unix(reset, 0)}, true
}
