package xsim

import (
	"slices"
	"time"
)

// Billing as X publishes it (2026), at its rates (billing.DefaultRates):
// every resource a 200 returns is billed at its type's rate (posts, users;
// media are not a billed type), including the expanded objects in includes
// — X does not document that, its own API simulator
// (xdevplatform/playground) bills them — and each resource once per UTC
// day per app (X says "deduplicated within a 24-hour UTC day window", not
// per what; a soft guarantee). The bookmarks of the app's owner, read with
// the app, are "owned reads" at a lower post rate. A bookmark write is
// billed per request, each 200 of an add or a removal.

// billed is what one 200 returned, by billed type; included of the posts
// are expanded ones.
type billed struct {
	posts, users []string
	media        int
	included     int
}

// dayLedger is the resources one app was billed for on one UTC day.
type dayLedger struct {
	day          string
	posts, users map[string]struct{}
}

// SetAppOwner makes userID the owner of the app clientID ("" is the app of
// tokens from IssueToken): that user's bookmark reads with the app's tokens
// are owned reads.
func (s *Server) SetAppOwner(clientID, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appOwners[clientID] = userID
}

// IssueAppToken is IssueToken for the app clientID: billing is
// de-duplicated per app, and the app's owner reads at the owned rate.
func (s *Server) IssueAppToken(clientID, userID string, scopes ...string) string {
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(userID)
	if s.clients[clientID] == nil {
		s.clients[clientID] = &client{id: clientID}
	}
	return s.newTokenLocked(kindAccess, userID, clientID, scopes, 0)
}

// bill meters the resources of a 200 of op for userID, read with app's
// token at now. s.mu held.
func (s *Server) bill(userID, app, op string, now time.Time, b billed) {
	u := s.usageRow(userID, op)
	day := now.UTC().Format(time.DateOnly)
	l := s.billedToday[app]
	if l == nil || l.day != day {
		l = &dayLedger{day: day, posts: map[string]struct{}{}, users: map[string]struct{}{}}
		s.billedToday[app] = l
	}
	posts, users := firstToday(l.posts, b.posts), firstToday(l.users, b.users)
	postRate := s.rates.Post
	if owner, ok := s.appOwners[app]; ok && owner == userID && op == OpListBookmarks {
		u.OwnedReads = true
		postRate = s.rates.OwnedPost
	}
	u.PostsReturned += len(b.posts)
	u.IncludedPosts += b.included
	u.PostsBilled += posts
	u.UsersReturned += len(b.users)
	u.UsersBilled += users
	u.MediaReturned += b.media
	u.USD += float64(posts)*postRate + float64(users)*s.rates.User
	s.totalBilled += len(b.posts)
}

// firstToday adds ids to seen and returns how many it did not hold.
func firstToday(seen map[string]struct{}, ids []string) int {
	n := 0
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			seen[id] = struct{}{}
			n++
		}
	}
	return n
}

// billWrite meters a write request X answered: billed per request. s.mu
// held.
func (s *Server) billWrite(userID, op string) {
	u := s.usageRow(userID, op)
	u.WritesBilled++
	u.USD += s.rates.Write
}

// addUniq appends id to list unless it holds it.
func addUniq(list []string, id string) []string {
	if slices.Contains(list, id) {
		return list
	}
	return append(list, id)
}

// BilledToday returns the posts the app clientID was billed for on the
// current UTC day of the server's clock.
func (s *Server) BilledToday(clientID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.billedToday[clientID]
	if l == nil || l.day != s.clk.Now().UTC().Format(time.DateOnly) {
		return nil
	}
	out := make([]string, 0, len(l.posts))
	for id := range l.posts {
		out = append(out, id)
	}
	return out
}
