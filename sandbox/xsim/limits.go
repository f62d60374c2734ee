package xsim

import (
	"maps"
	"time"
)

// Rate limits (document Part 8) and the billing meter.

// DefaultLimits are the per-user limits per 15-minute window, by operation.
var DefaultLimits = map[string]int{
	OpListBookmarks:  180,
	OpListFolders:    50,
	OpGetFolder:      50,
	OpAddBookmark:    50,
	OpRemoveBookmark: 50,
	OpUsersMe:        75,
}

// DefaultAppLimits are the per-app limits per window (operations not listed
// have no per-app limit).
var DefaultAppLimits = map[string]int{
	OpListFolders: 50,
	OpGetFolder:   50,
}

type bucketKey struct {
	app bool
	who string // user id, or client id for app buckets ("" = tokens issued without a client)
	op  string
}

// bucket is a fixed window: it starts at the first request after the previous
// window ended and resets at start + window.
type bucket struct {
	start time.Time
	count int
}

// rlInfo is what goes in the x-rate-limit-* headers.
type rlInfo struct {
	set              bool
	limit, remaining int
	reset            int64 // Unix seconds, rounded up
}

// unlimited is the limit advertised when rate limits are disabled: a client
// that keeps its own budget from the headers (as it should) then never waits.
const unlimited = 1_000_000_000

func ceilUnix(t time.Time) int64 {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return sec
}

func (s *Server) userLimit(op string) int {
	if n, ok := s.opts.Limits[op]; ok {
		return n
	}
	return DefaultLimits[op]
}

func (s *Server) appLimit(op string) (int, bool) {
	if n, ok := s.opts.AppLimits[op]; ok {
		return n, true
	}
	n, ok := DefaultAppLimits[op]
	return n, ok
}

// peek reports a bucket's state without counting a request. s.mu held.
func (s *Server) peek(who, op string, now time.Time) rlInfo {
	limit := s.userLimit(op)
	if s.opts.DisableRateLimits {
		return rlInfo{true, unlimited, unlimited, ceilUnix(now.Add(s.window))}
	}
	b := s.buckets[bucketKey{who: who, op: op}]
	if who == "" || b == nil || !now.Before(b.start.Add(s.window)) {
		return rlInfo{true, limit, limit, ceilUnix(now.Add(s.window))}
	}
	return rlInfo{true, limit, max(0, limit-b.count), ceilUnix(b.start.Add(s.window))}
}

func (s *Server) hit(k bucketKey, limit int, now time.Time) (rlInfo, bool) {
	b := s.buckets[k]
	if b == nil {
		b = &bucket{}
		s.buckets[k] = b
	}
	if b.start.IsZero() || !now.Before(b.start.Add(s.window)) {
		b.start = now
		b.count = 0
	}
	b.count++
	return rlInfo{true, limit, max(0, limit-b.count), ceilUnix(b.start.Add(s.window))}, b.count > limit
}

// consume counts one request against the user's (and, where the operation
// has one, the app's) bucket. It returns the headers to send and whether the
// request is over a limit. s.mu held.
func (s *Server) consume(userID, app, op string, now time.Time) (rlInfo, bool) {
	limit := s.userLimit(op)
	if s.opts.DisableRateLimits {
		return rlInfo{true, unlimited, unlimited, ceilUnix(now.Add(s.window))}, false
	}
	info, over := s.hit(bucketKey{who: userID, op: op}, limit, now)
	if al, ok := s.appLimit(op); ok {
		ai, aover := s.hit(bucketKey{app: true, who: app, op: op}, al, now)
		if aover || ai.remaining < info.remaining {
			info = ai
		}
		over = over || aover
	}
	return info, over
}

// ResetRateLimits forgets all rate-limit windows.
func (s *Server) ResetRateLimits() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.buckets)
}

// OpUsage is the meter of one user and one operation.
type OpUsage struct {
	Requests int // every request that reached the operation
	OK       int // 200 responses (including truncated ones)
	// PostsReturned is the posts 200s held: data, and expanded posts in
	// includes.tweets (X bills both); IncludedPosts those of includes.
	PostsReturned, IncludedPosts int
	// PostsBilled is PostsReturned less the posts the same app was already
	// billed for on the same UTC day (of the server's clock).
	PostsBilled int
	// UsersReturned and UsersBilled are the same for users (expanded
	// authors, and users/me).
	UsersReturned, UsersBilled int
	MediaReturned              int         // expanded media objects (not billed)
	FoldersReturned            int         // folder entries returned by list_folders (not billed)
	RateLimited                int         // 429s, real and injected
	ByStatus                   map[int]int // every response by status; 0 = connection reset
	// OwnedReads says the posts were owned reads: list_bookmarks of the
	// owner of the token's app (SetAppOwner).
	OwnedReads bool
	// WritesBilled is the add and remove requests answered, each billed.
	WritesBilled int
	// USD is what was billed: PostsBilled at the post rate (the owned-read
	// rate for owned reads), UsersBilled at the user rate, WritesBilled at
	// the write rate.
	USD float64
}

// usageRow returns the meter of (userID, op). s.mu held.
func (s *Server) usageRow(userID, op string) *OpUsage {
	m := s.usage[userID]
	if m == nil {
		m = map[string]*OpUsage{}
		s.usage[userID] = m
	}
	u := m[op]
	if u == nil {
		u = &OpUsage{ByStatus: map[int]int{}}
		m[op] = u
	}
	return u
}

// record meters one response; posts are the posts of its data, which spend
// credits. The resources of a 200 are billed with bill. s.mu held.
func (s *Server) record(userID, op string, status, posts, folders int) {
	u := s.usageRow(userID, op)
	u.Requests++
	u.ByStatus[status]++
	switch status {
	case 200:
		u.OK++
		u.FoldersReturned += folders
		if s.credits >= 0 {
			s.credits = max(0, s.credits-posts)
		}
	case 429:
		u.RateLimited++
	}
}

// Usage returns the user's meter by operation (a copy).
func (s *Server) Usage(userID string) map[string]OpUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]OpUsage{}
	for op, u := range s.usage[userID] {
		c := *u
		c.ByStatus = maps.Clone(u.ByStatus)
		out[op] = c
	}
	return out
}

// TotalPostsReturned is the number of posts returned across all users since
// the last ResetUsage (before the same-day de-duplication).
func (s *Server) TotalPostsReturned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totalBilled
}

// ResetUsage clears the meter (not the credits, rate limits or hook sequence numbers).
func (s *Server) ResetUsage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.usage)
	clear(s.billedToday)
	s.totalBilled = 0
}

// SetCredits sets the remaining credit balance in posts (-1 = unlimited, the
// default). Each billed post spends one credit; a post-reading request that
// would bill more posts than remain (or any when none remain) gets 402.
func (s *Server) SetCredits(posts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if posts < 0 {
		posts = -1
	}
	s.credits = posts
}

// Credits returns the remaining credit balance in posts (-1 = unlimited).
func (s *Server) Credits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.credits
}
