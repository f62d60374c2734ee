package xsim

import (
	"errors"
	"strconv"
	"time"
)

// What the user does in the X app: bookmarking, unbookmarking, folders. The
// bookmark list is a slice stored oldest-first, so bookmarking is an append
// and the newest post is the last element.

// ErrNotBookmarked is returned by Unbookmark for a post that is not in the list.
var ErrNotBookmarked = errors.New("xsim: post is not bookmarked")

// ErrEmptyID is returned for an empty user or post id.
var ErrEmptyID = errors.New("xsim: empty id")

type entry struct {
	id string
	at int64 // bookmark time, Unix nanoseconds, strictly increasing
}

type folder struct {
	id, name string
	posts    []string // oldest-added first
}

type user struct {
	id       string
	info     userInfo
	list     []entry // oldest first
	folders  []*folder
	explicit bool // added with AddUser
}

// Folder is a bookmark folder.
type Folder struct {
	ID   string
	Name string
}

// ensureUser returns the user, creating it (username "user_<id>") if needed. s.mu held.
func (s *Server) ensureUser(id string) *user {
	u := s.users[id]
	if u == nil {
		u = &user{id: id, info: userInfo{username: "user_" + id, name: "User " + id}}
		s.users[id] = u
		s.names.Store(id, u.info)
	}
	return u
}

// stamp returns a bookmark time: the clock's now, strictly increasing. s.mu held.
func (s *Server) stamp() int64 {
	t := s.clk.Now().UnixNano()
	if t <= s.lastStamp {
		t = s.lastStamp + 1
	}
	s.lastStamp = t
	return t
}

// AddUser registers a user (name = username). Users are also created on first
// use by any other method that names them, with username "user_<id>".
func (s *Server) AddUser(id, username string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.ensureUser(id)
	u.info = userInfo{username: username, name: username}
	u.explicit = true
	s.names.Store(id, u.info)
}

// PutPost registers explicit content for p.ID, replacing the generated content.
func (s *Server) PutPost(p Post) {
	c := p
	c.ReferencedTweets = append([]ReferencedTweet(nil), p.ReferencedTweets...)
	c.MediaKeys = append([]string(nil), p.MediaKeys...)
	if p.EditHistoryTweetIDs != nil {
		c.EditHistoryTweetIDs = append([]string(nil), p.EditHistoryTweetIDs...)
	}
	if _, loaded := s.posts.Swap(p.ID, &c); !loaded {
		s.nPosts.Add(1)
	}
}

// PostContent returns the content the server serves for post id: the
// registered Post, or the one generated from the id.
func (s *Server) PostContent(id string) Post {
	var v view
	s.fillView(&v, id)
	return v.toPost()
}

func (s *Server) fillView(v *view, id string) {
	if s.nPosts.Load() > 0 {
		if p, ok := s.posts.Load(id); ok {
			v.fromPost(p.(*Post))
			return
		}
	}
	v.generate(id)
}

func (s *Server) userName(id string) *userInfo {
	if x, ok := s.names.Load(id); ok {
		ui := x.(userInfo)
		return &ui
	}
	return nil
}

func indexOf(list []entry, id string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].id == id {
			return i
		}
	}
	return -1
}

// Bookmark puts postID at the top of the user's list, moving it there if it is
// already bookmarked. The bookmark time is the clock's now (strictly increasing).
func (s *Server) Bookmark(userID, postID string) error {
	if userID == "" || postID == "" {
		return ErrEmptyID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bookmarkLocked(s.ensureUser(userID), postID)
	return nil
}

func (s *Server) bookmarkLocked(u *user, postID string) {
	if i := indexOf(u.list, postID); i >= 0 {
		u.list = append(u.list[:i], u.list[i+1:]...)
	}
	u.list = append(u.list, entry{id: postID, at: s.stamp()})
}

// Unbookmark removes postID from the user's list; the posts below it move up.
func (s *Server) Unbookmark(userID, postID string) error {
	if userID == "" || postID == "" {
		return ErrEmptyID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.unbookmarkLocked(s.ensureUser(userID), postID) {
		return ErrNotBookmarked
	}
	return nil
}

func (s *Server) unbookmarkLocked(u *user, postID string) bool {
	i := indexOf(u.list, postID)
	if i < 0 {
		return false
	}
	u.list = append(u.list[:i], u.list[i+1:]...)
	return true
}

// nextID returns a fresh snowflake-like post id. Ids are a bijective mix of a
// counter, so they are unique, 18-19 decimal digits, and unordered with
// respect to the order they were issued in. s.mu held.
func (s *Server) nextID() uint64 {
	s.idCounter++
	const mask = 1<<60 - 1
	x := (s.idCounter ^ s.idSalt) & mask
	x ^= x >> 31
	x = (x * 0x9e3779b97f4a7c15) & mask
	x ^= x >> 29
	x = (x * 0xbf58476d1ce4e5b9) & mask
	x ^= x >> 32
	// 2015-01-01 as a snowflake timestamp, plus up to 2^60 (about 8.7 years of ms<<22).
	const base = (1420070400000 - twitterEpoch) << 22
	return base + x
}

// NewPostID returns a fresh unique post id.
func (s *Server) NewPostID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.nextID(), 10)
}

// SeedBookmarks bookmarks n new posts with fresh ids, oldest first, and
// returns their ids newest first. It is built for large n (a million takes
// a fraction of a second): the ids share one backing string.
func (s *Server) SeedBookmarks(userID string, n int) []string {
	if n <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.ensureUser(userID)
	buf := make([]byte, 0, n*19)
	offs := make([]int, n+1)
	for i := range n {
		offs[i] = len(buf)
		buf = strconv.AppendUint(buf, s.nextID(), 10)
	}
	offs[n] = len(buf)
	all := string(buf)
	if cap(u.list)-len(u.list) < n {
		nl := make([]entry, len(u.list), len(u.list)+n)
		copy(nl, u.list)
		u.list = nl
	}
	out := make([]string, n)
	at := s.stamp() // then consecutive nanoseconds
	for i := range n {
		id := all[offs[i]:offs[i+1]]
		u.list = append(u.list, entry{id: id, at: at + int64(i)})
		out[n-1-i] = id
	}
	s.lastStamp = at + int64(n-1)
	return out
}

// Bookmarks returns the user's current list, newest first (a copy).
func (s *Server) Bookmarks(userID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return nil
	}
	out := make([]string, len(u.list))
	for i, e := range u.list {
		out[len(u.list)-1-i] = e.id
	}
	return out
}

// BookmarkedAt returns when postID was (last) bookmarked by the user.
func (s *Server) BookmarkedAt(userID, postID string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return time.Time{}, false
	}
	i := indexOf(u.list, postID)
	if i < 0 {
		return time.Time{}, false
	}
	return time.Unix(0, u.list[i].at), true
}

func (u *user) folder(id string) *folder {
	for _, f := range u.folders {
		if f.id == id {
			return f
		}
	}
	return nil
}

// CreateFolder creates a folder (or renames an existing one). Folders are
// listed in creation order.
func (s *Server) CreateFolder(userID, folderID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.ensureUser(userID)
	if f := u.folder(folderID); f != nil {
		f.name = name
		return
	}
	u.folders = append(u.folders, &folder{id: folderID, name: name})
}

// DeleteFolder deletes a folder. The posts in it stay bookmarked.
func (s *Server) DeleteFolder(userID, folderID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return
	}
	for i, f := range u.folders {
		if f.id == folderID {
			u.folders = append(u.folders[:i], u.folders[i+1:]...)
			return
		}
	}
}

// AddToFolder puts postID at the top of the folder (moving it if present),
// creating the folder (named after its id) if needed. Folders are independent
// of the main list: adding to a folder does not bookmark, and unbookmarking
// does not remove from folders.
func (s *Server) AddToFolder(userID, folderID, postID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.ensureUser(userID)
	f := u.folder(folderID)
	if f == nil {
		f = &folder{id: folderID, name: folderID}
		u.folders = append(u.folders, f)
	}
	for i := len(f.posts) - 1; i >= 0; i-- {
		if f.posts[i] == postID {
			f.posts = append(f.posts[:i], f.posts[i+1:]...)
			break
		}
	}
	f.posts = append(f.posts, postID)
}

// RemoveFromFolder removes postID from the folder.
func (s *Server) RemoveFromFolder(userID, folderID, postID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return
	}
	if f := u.folder(folderID); f != nil {
		for i := len(f.posts) - 1; i >= 0; i-- {
			if f.posts[i] == postID {
				f.posts = append(f.posts[:i], f.posts[i+1:]...)
				return
			}
		}
	}
}

// FolderPosts returns the folder's post ids, newest-added first.
func (s *Server) FolderPosts(userID, folderID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return nil
	}
	f := u.folder(folderID)
	if f == nil {
		return nil
	}
	out := make([]string, len(f.posts))
	for i, id := range f.posts {
		out[len(f.posts)-1-i] = id
	}
	return out
}

// Folders returns the user's folders in creation order.
func (s *Server) Folders(userID string) []Folder {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return nil
	}
	out := make([]Folder, len(u.folders))
	for i, f := range u.folders {
		out[i] = Folder{ID: f.id, Name: f.name}
	}
	return out
}
