package xsim

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/internal/clock"
)

// Operation names, as used in meters, limits, faults and RequestInfo.
const (
	OpUsersMe        = "users_me"
	OpListBookmarks  = "list_bookmarks"
	OpListFolders    = "list_folders"
	OpGetFolder      = "get_folder"
	OpAddBookmark    = "add_bookmark"
	OpRemoveBookmark = "remove_bookmark"
	OpToken          = "oauth_token"
	OpRevoke         = "oauth_revoke"
	OpAuthorize      = "oauth_authorize"
)

// Options configures a Server. The zero value is a server with the real
// clock, 15-minute windows, the documented limits, no faults and unlimited credits.
type Options struct {
	Clock               clock.Clock    // nil = clock.Real{}
	Window              time.Duration  // 0 = 15m
	Limits              map[string]int // override per-user limits by operation name
	AppLimits           map[string]int // override per-app limits by operation name (default: list_folders 50, get_folder 50)
	DisableRateLimits   bool           // never 429 (headers advertise a limit of 1e9)
	LegacyRateLimitBody bool           // 429 body {"errors":[{"code":88,"message":"Rate limit exceeded"}]}
	Faults              Faults
	Addr                string // "" = 127.0.0.1:0
	// RevokeAccessOnRefresh makes a refresh also revoke the access token
	// issued with the spent refresh token (by default it stays valid until it expires).
	RevokeAccessOnRefresh bool
	// Compliance configures the batch compliance jobs (compliance.go).
	Compliance ComplianceOptions
	// Naming is the naming the bookmarks operation answers in: "" or
	// "tweets", X's OpenAPI description 2.166 and API reference
	// (tweet.fields, referenced_tweets.id, includes.tweets, ...); "posts",
	// its description 2.167 (post.fields, referenced_posts, includes.posts,
	// note_post, repost_count, ...). A request in the other naming is
	// refused, as X refuses a parameter it does not have.
	Naming string
	// MediaSize gives the size of the file at each path of the media host
	// (media.go); nil: photos of 2 to 40 KB, videos of 50 to 300 KB.
	MediaSize func(path string) int64
	// MediaBandwidth is the bytes per second the media host sends in all,
	// as over a downloader's link; 0: as fast as loopback goes.
	MediaBandwidth int64
}

// RequestInfo describes a request to an API or OAuth operation, given to the
// OnRequest hook before the request is served.
type RequestInfo struct {
	Operation string
	UserID    string // the :id of the path; for users_me the token's user ("" if the token is not valid)
	Seq       int    // per-user per-operation request count, starting at 1
	Query     url.Values
	Method    string
	Path      string
	PostID    string // the post a bookmark is added (its JSON body's tweet_id) or removed for
	UserAgent string
}

// Server is the simulator. All methods are safe for concurrent use.
type Server struct {
	opts    Options
	clk     clock.Clock
	window  time.Duration
	rates   billing.Rates
	handler http.Handler
	pageKey uint64

	hs  *http.Server
	url string

	mu          sync.Mutex
	users       map[string]*user
	clients     map[string]*client
	tokens      map[string]*tokenRec
	codes       map[string]*authCode
	buckets     map[bucketKey]*bucket
	usage       map[string]map[string]*OpUsage
	seqs        map[[2]string]int
	totalBilled int
	billedToday map[string]*dayLedger // by app (client id)
	appOwners   map[string]string     // app (client id) -> owner user id
	credits     int
	faults      Faults
	faultN      int
	hook        func(RequestInfo)
	idCounter   uint64
	idSalt      uint64
	lastStamp   int64

	posts  sync.Map // post id -> *Post
	nPosts atomic.Int64
	names  sync.Map // user id -> userInfo

	comp  *complianceState // under mu
	media *mediaHost
}

// New returns a server that is not yet listening (see Start, or use Handler).
func New(opts Options) *Server {
	s := &Server{
		opts:    opts,
		clk:     opts.Clock,
		window:  opts.Window,
		rates:   billing.DefaultRates(),
		users:   map[string]*user{},
		clients: map[string]*client{},
		tokens:  map[string]*tokenRec{},
		codes:   map[string]*authCode{},
		buckets: map[bucketKey]*bucket{},
		usage:   map[string]map[string]*OpUsage{},
		seqs:    map[[2]string]int{},
		credits: -1,

		billedToday: map[string]*dayLedger{},
		appOwners:   map[string]string{},
		comp:        newComplianceState(opts.Compliance),
		media:       newMediaHost(opts.MediaSize, opts.MediaBandwidth),
	}
	if s.clk == nil {
		s.clk = clock.Real{}
	}
	if s.window <= 0 {
		s.window = 15 * time.Minute
	}
	s.faults = opts.Faults
	s.faults.Operations = slices.Clone(opts.Faults.Operations)
	var k [8]byte
	_, _ = rand.Read(k[:])
	s.pageKey = binary.LittleEndian.Uint64(k[:])

	mux := http.NewServeMux()
	mux.HandleFunc("GET /2/users/me", s.api(OpUsersMe))
	mux.HandleFunc("GET /2/users/{id}/bookmarks", s.api(OpListBookmarks))
	mux.HandleFunc("POST /2/users/{id}/bookmarks", s.api(OpAddBookmark))
	mux.HandleFunc("DELETE /2/users/{id}/bookmarks/{tweet_id}", s.api(OpRemoveBookmark))
	mux.HandleFunc("GET /2/users/{id}/bookmarks/folders", s.api(OpListFolders))
	mux.HandleFunc("GET /2/users/{id}/bookmarks/folders/{folder_id}", s.api(OpGetFolder))
	mux.HandleFunc("GET /2/oauth2/authorize", s.handleAuthorize)
	mux.HandleFunc("POST /2/oauth2/authorize", s.handleConsent)
	mux.HandleFunc("POST /2/oauth2/token", s.handleToken)
	mux.HandleFunc("POST /2/oauth2/revoke", s.handleRevoke)
	s.complianceRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, problem("Not Found Error", "No route for "+r.Method+" "+r.URL.Path+".", "https://api.x.com/2/problems/resource-not-found", 404))
	})
	s.handler = mux
	return s
}

// Start listens on Options.Addr (default 127.0.0.1, a random port) and serves
// in a goroutine.
func (s *Server) Start() error {
	addr := s.opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if err := s.startStorage(); err != nil {
		ln.Close()
		return err
	}
	if err := s.startMedia(); err != nil {
		ln.Close()
		s.closeStorage()
		return err
	}
	s.hs = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String()
	go func() { _ = s.hs.Serve(ln) }()
	return nil
}

// URL is the base URL ("http://127.0.0.1:PORT"); API paths start with /2/.
func (s *Server) URL() string { return s.url }

// AuthorizeURL is the OAuth 2.0 authorization endpoint.
func (s *Server) AuthorizeURL() string { return s.url + "/2/oauth2/authorize" }

// TokenURL is the OAuth 2.0 token endpoint.
func (s *Server) TokenURL() string { return s.url + "/2/oauth2/token" }

// RevokeURL is the OAuth 2.0 revocation endpoint.
func (s *Server) RevokeURL() string { return s.url + "/2/oauth2/revoke" }

// Close stops the server and closes all connections.
func (s *Server) Close() {
	if s.hs != nil {
		_ = s.hs.Close()
	}
	s.closeStorage()
	s.closeMedia()
}

// Handler is the server's HTTP handler (for use with httptest or your own listener).
func (s *Server) Handler() http.Handler { return s.handler }

// OnRequest sets a hook called before each API and OAuth token/revoke request
// is served, without the server lock held: it may call Bookmark, Unbookmark etc.
func (s *Server) OnRequest(h func(RequestInfo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// callHook numbers the request and calls the hook.
func (s *Server) callHook(op, userID string, r *http.Request) {
	s.mu.Lock()
	k := [2]string{userID, op}
	s.seqs[k]++
	seq := s.seqs[k]
	h := s.hook
	s.mu.Unlock()
	if h != nil {
		h(RequestInfo{Operation: op, UserID: userID, Seq: seq, Query: r.URL.Query(), Method: r.Method, Path: r.URL.Path, PostID: postOf(op, r), UserAgent: r.UserAgent()})
	}
}

// postOf is the post of a request to add or remove a bookmark, read
// without taking the body from the handler.
func postOf(op string, r *http.Request) string {
	switch op {
	case OpRemoveBookmark:
		return r.PathValue("tweet_id")
	case OpAddBookmark:
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var body struct {
			TweetID string `json:"tweet_id"`
		}
		_ = json.Unmarshal(raw, &body)
		return body.TweetID
	}
	return ""
}

// ---- responses ------------------------------------------------------------------

type pageKind int

const (
	pagePosts pageKind = iota
	pageIDs
	pageFolders
)

type pageOut struct {
	kind       pageKind
	ids        []string
	folders    []Folder
	next, prev string
	fs         fieldSpec
	includes   *includesPlan
}

type result struct {
	status    int
	rl        rlInfo
	body      []byte
	page      *pageOut
	truncate  bool
	connReset bool
}

func problem(title, detail, typ string, status int) []byte {
	b := make([]byte, 0, 128+len(detail))
	b = append(b, `{"title":`...)
	b = appendStr(b, title)
	b = appendKeyStr(b, "detail", detail)
	b = appendKeyStr(b, "type", typ)
	b = appendKeyInt(b, "status", int64(status))
	return append(b, '}')
}

var (
	unauthorizedBody = []byte(`{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`)
	appOnlyBody      = []byte(`{"title":"Unsupported Authentication","detail":"Authenticating with OAuth 2.0 Application-Only is forbidden for this endpoint.  Supported authentication types are [OAuth 2.0 User Context].","type":"https://api.x.com/2/problems/unsupported-authentication","status":403}`)
	creditsBody      = []byte(`{"title":"CreditsDepleted","detail":"Your enrolled account does not have any credits to fulfill this request.","type":"https://api.x.com/2/problems/credits","status":402}`)
	tooManyBody      = []byte(`{"title":"Too Many Requests","detail":"Too Many Requests","type":"about:blank","status":429}`)
	legacyTooMany    = []byte(`{"errors":[{"code":88,"message":"Rate limit exceeded"}]}`)
)

func (s *Server) tooMany() []byte {
	if s.opts.LegacyRateLimitBody {
		return legacyTooMany
	}
	return tooManyBody
}

func serverErrorBody(status int) []byte {
	t := http.StatusText(status)
	return problem(t, t, "about:blank", status)
}

func notFound(kind, param, id string) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"title":"Not Found Error","detail":`...)
	b = appendStr(b, "Could not find "+kind+" with "+param+": ["+id+"].")
	b = append(b, `,"type":"https://api.x.com/2/problems/resource-not-found","status":404`...)
	b = appendKeyStr(b, "resource_type", kind)
	b = appendKeyStr(b, "parameter", param)
	b = appendKeyStr(b, "resource_id", id)
	b = appendKeyStr(b, "value", id)
	return append(b, '}')
}

func invalidRequest(p *paramErrors) []byte {
	b := make([]byte, 0, 512)
	b = append(b, `{"errors":[`...)
	for i, e := range p.items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"parameters":{`...)
		b = appendStr(b, e.param)
		b = append(b, ":["...)
		b = appendStr(b, e.value)
		b = append(b, `]},"message":`...)
		b = appendStr(b, e.message)
		b = append(b, '}')
	}
	b = append(b, `],"title":"Invalid Request","detail":`...)
	b = appendStr(b, p.items[0].message)
	b = append(b, `,"type":"https://api.x.com/2/problems/invalid-request","status":400}`...)
	return b
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSONValue(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, b)
}

func setRL(h http.Header, rl rlInfo) {
	if !rl.set {
		return
	}
	h.Set("X-Rate-Limit-Limit", strconv.Itoa(rl.limit))
	h.Set("X-Rate-Limit-Remaining", strconv.Itoa(rl.remaining))
	h.Set("X-Rate-Limit-Reset", strconv.FormatInt(rl.reset, 10))
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}
var viewPool = sync.Pool{New: func() any { return &view{} }}

func (s *Server) respond(w http.ResponseWriter, res *result) {
	if res.connReset {
		resetConn(w)
		return
	}
	body := res.body
	var bp *[]byte
	if res.page != nil {
		bp = bufPool.Get().(*[]byte)
		body = s.encodePage((*bp)[:0], res.page)
	}
	if res.truncate {
		writeTruncated(w, res, body)
	} else {
		h := w.Header()
		setRL(h, res.rl)
		writeJSON(w, res.status, body)
	}
	if bp != nil && cap(body) <= 8<<20 {
		*bp = body[:0]
		bufPool.Put(bp)
	}
}

// resetConn hijacks the connection and closes it with a TCP RST.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// writeTruncated writes a 200 with a complete header (announcing the full
// length) and half of the body, then closes the connection.
func writeTruncated(w http.ResponseWriter, res *result, body []byte) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer conn.Close()
	var hb []byte
	hb = append(hb, "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: "...)
	hb = strconv.AppendInt(hb, int64(len(body)), 10)
	if res.rl.set {
		hb = append(hb, "\r\nX-Rate-Limit-Limit: "...)
		hb = strconv.AppendInt(hb, int64(res.rl.limit), 10)
		hb = append(hb, "\r\nX-Rate-Limit-Remaining: "...)
		hb = strconv.AppendInt(hb, int64(res.rl.remaining), 10)
		hb = append(hb, "\r\nX-Rate-Limit-Reset: "...)
		hb = strconv.AppendInt(hb, res.rl.reset, 10)
	}
	hb = append(hb, "\r\nConnection: close\r\n\r\n"...)
	_, _ = brw.Write(hb)
	_, _ = brw.Write(body[:len(body)/2])
	_ = brw.Flush()
}

// ---- pagination tokens ----------------------------------------------------------

var b32 = base32.HexEncoding.WithPadding(base32.NoPadding)

// pageToken encodes a position (offset from the top) in one list as an
// opaque base32hex string: the offset, enciphered with a keyed Feistel
// permutation so tokens look random, plus a 32-bit check value. scope names
// the list (operation, user, folder); a token is only accepted for its own list.
func (s *Server) pageToken(scope string, off int) string {
	sh := hash64(scope) ^ s.pageKey
	var raw [12]byte
	binary.BigEndian.PutUint64(raw[:8], feistel(uint64(off), sh, false))
	binary.BigEndian.PutUint32(raw[8:], uint32(mix64(sh^uint64(off)*0x9e3779b97f4a7c15)))
	return b32.EncodeToString(raw[:])
}

func (s *Server) parsePageToken(scope, tok string) (int, bool) {
	raw, err := b32.DecodeString(tok)
	if err != nil || len(raw) != 12 {
		return 0, false
	}
	sh := hash64(scope) ^ s.pageKey
	off := feistel(binary.BigEndian.Uint64(raw[:8]), sh, true)
	if off > 1<<40 || binary.BigEndian.Uint32(raw[8:]) != uint32(mix64(sh^off*0x9e3779b97f4a7c15)) {
		return 0, false
	}
	return int(off), true
}

// feistel is a keyed 4-round Feistel permutation of 64-bit values (inverse when decrypt).
func feistel(x, key uint64, decrypt bool) uint64 {
	l, r := uint32(x>>32), uint32(x)
	for i := range 4 {
		round := i
		if decrypt {
			round = 3 - i
		}
		f := func(v uint32) uint32 { return uint32(mix64(key ^ uint64(v) ^ uint64(round+1)<<40)) }
		if !decrypt {
			l, r = r, l^f(r)
		} else {
			l, r = r^f(l), l
		}
	}
	return uint64(l)<<32 | uint64(r)
}

// ---- API requests -----------------------------------------------------------------

type apiReq struct {
	max      int
	off      int
	fs       fieldSpec
	perr     paramErrors
	folderID string
	tweetID  string
}

func bearerToken(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

func isPostID(s string) bool {
	if len(s) == 0 || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (s *Server) parseRequest(op, pathUser string, r *http.Request) *apiReq {
	q := r.URL.Query()
	req := &apiReq{max: 10}
	scope := op + "\x00" + pathUser
	posts := s.opts.Naming == namingPosts
	switch op {
	case OpUsersMe:
		params := meParams
		if posts {
			params = postsMeParams
		}
		checkParams(q, params, &req.perr)
		req.fs = parseFieldSpec(q, &req.perr, posts)
	case OpListBookmarks, OpListFolders, OpGetFolder:
		if op == OpListBookmarks {
			params := listParams
			if posts {
				params = postsListParams
			}
			checkParams(q, params, &req.perr)
			req.fs = parseFieldSpec(q, &req.perr, posts)
		} else {
			checkParams(q, pageParams, &req.perr)
		}
		if op == OpGetFolder {
			req.folderID = r.PathValue("folder_id")
			scope += "\x00" + req.folderID
		}
		req.max = parseMaxResults(q, 10, &req.perr)
		if vals, ok := q["pagination_token"]; ok && len(vals) > 0 {
			off, ok := s.parsePageToken(scope, vals[0])
			if !ok {
				req.perr.add("pagination_token", vals[0], "The `pagination_token` query parameter value ["+vals[0]+"] is not valid")
			}
			req.off = off
		}
	case OpAddBookmark:
		checkParams(q, nil, &req.perr)
		var body struct {
			TweetID *string `json:"tweet_id"`
		}
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err := json.Unmarshal(raw, &body); err != nil || body.TweetID == nil {
			req.perr.add("tweet_id", string(raw), "The request body must be a JSON object with a string `tweet_id`")
		} else if !isPostID(*body.TweetID) {
			req.perr.add("tweet_id", *body.TweetID, "The `tweet_id` value ["+*body.TweetID+"] does not match ^[0-9]{1,19}$")
		} else {
			req.tweetID = *body.TweetID
		}
	case OpRemoveBookmark:
		checkParams(q, nil, &req.perr)
		req.tweetID = r.PathValue("tweet_id")
		if !isPostID(req.tweetID) {
			req.perr.add("tweet_id", req.tweetID, "The `tweet_id` path parameter value ["+req.tweetID+"] does not match ^[0-9]{1,19}$")
		}
	}
	if op != OpUsersMe && !isUserID(pathUser) {
		req.perr.add("id", pathUser, "The `id` path parameter value ["+pathUser+"] is not valid")
	}
	return req
}

func isUserID(s string) bool { return s != "" && len(s) <= 64 && !strings.ContainsAny(s, "/ ") }

var opScopes = map[string][]string{
	OpUsersMe:        {"tweet.read", "users.read"},
	OpListBookmarks:  {"tweet.read", "users.read", "bookmark.read"},
	OpListFolders:    {"tweet.read", "users.read", "bookmark.read"},
	OpGetFolder:      {"tweet.read", "users.read", "bookmark.read"},
	OpAddBookmark:    {"tweet.read", "users.read", "bookmark.write"},
	OpRemoveBookmark: {"tweet.read", "users.read", "bookmark.write"},
}

func (s *Server) api(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pathUser := r.PathValue("id")
		bearer := bearerToken(r)
		userKey := pathUser
		if op == OpUsersMe {
			s.mu.Lock()
			if t := s.tokens[bearer]; t != nil && t.kind == kindAccess {
				userKey = t.user
			}
			s.mu.Unlock()
		}
		s.callHook(op, userKey, r)
		fault, latency := s.nextFault(op)
		if latency > 0 {
			time.Sleep(latency)
		}
		req := s.parseRequest(op, pathUser, r)
		s.mu.Lock()
		res := s.decide(op, pathUser, userKey, bearer, req, fault)
		s.mu.Unlock()
		s.respond(w, res)
	}
}

// creditsOK reports whether n posts may be billed. s.mu held.
func (s *Server) creditsOK(n int) bool {
	return s.credits < 0 || (s.credits > 0 && n <= s.credits)
}

// decide applies, in order: injected faults, authentication, rate limits,
// the path user, token/user match, scopes, parameters, credits; then serves.
// s.mu held.
func (s *Server) decide(op, pathUser, userKey, bearer string, req *apiReq, fault Fault) *result {
	now := s.clk.Now()
	res := &result{status: 200}
	t := s.tokens[bearer]
	valid := t != nil && t.kind != kindRefresh && t.live(now)
	meterUser, app := userKey, ""
	if valid && t.kind == kindAccess {
		meterUser, app = t.user, t.client
	}
	fail := func(status int, body []byte) *result {
		res.status = status
		res.body = body
		s.record(meterUser, op, status, 0, 0)
		return res
	}
	switch fault.Kind {
	case FaultServerError:
		res.rl = s.peek(meterUser, op, now)
		return fail(fault.Status, serverErrorBody(fault.Status))
	case FaultRateLimit:
		res.rl = rlInfo{true, s.userLimit(op), 0, ceilUnix(now.Add(fault.ResetIn))}
		return fail(429, s.tooMany())
	case FaultConnReset:
		res.connReset = true
		s.record(meterUser, op, 0, 0, 0)
		return res
	}
	if !valid {
		res.rl = s.peek(userKey, op, now)
		return fail(401, unauthorizedBody)
	}
	if t.kind == kindApp {
		res.rl = s.peek(userKey, op, now)
		return fail(403, appOnlyBody)
	}
	rl, over := s.consume(t.user, t.client, op, now)
	res.rl = rl
	if over {
		return fail(429, s.tooMany())
	}
	var u *user
	if op == OpUsersMe {
		u = s.ensureUser(t.user)
	} else {
		if u = s.users[pathUser]; u == nil {
			if !req.perr.empty() {
				return fail(400, invalidRequest(&req.perr))
			}
			return fail(404, notFound("user", "id", pathUser))
		}
		if t.user != pathUser {
			return fail(403, problem("Forbidden", "You are not permitted to access the bookmarks of user ["+pathUser+"] with a token issued for user ["+t.user+"].", "about:blank", 403))
		}
	}
	var missing []string
	for _, sc := range opScopes[op] {
		if !slices.Contains(t.scopes, sc) {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		return fail(403, problem("Forbidden", "Missing required OAuth 2.0 scope(s): ["+strings.Join(missing, " ")+"]. Granted scope(s): ["+strings.Join(t.scopes, " ")+"].", "https://api.x.com/2/problems/oauth2-scopes", 403))
	}
	if !req.perr.empty() {
		return fail(400, invalidRequest(&req.perr))
	}
	res.truncate = fault.Kind == FaultTruncate
	scope := op + "\x00" + pathUser
	switch op {
	case OpUsersMe:
		b := make([]byte, 0, 256)
		b = append(b, `{"data":`...)
		b = appendUser(b, u.id, &u.info, req.fs.uf, req.fs.posts)
		res.body = append(b, '}')
		s.record(meterUser, op, 200, 0, 0)
		s.bill(meterUser, app, op, now, billed{users: []string{u.id}})
	case OpListBookmarks:
		n := len(u.list)
		off := min(req.off, n)
		cnt := min(off+req.max, n) - off
		if !s.creditsOK(cnt) {
			return fail(402, creditsBody)
		}
		p := &pageOut{kind: pagePosts, fs: req.fs, ids: make([]string, cnt)}
		for k := range cnt {
			p.ids[k] = u.list[n-1-off-k].id
		}
		if off+cnt < n {
			p.next = s.pageToken(scope, off+cnt)
		}
		if off > 0 {
			p.prev = s.pageToken(scope, max(0, off-req.max))
		}
		p.includes = s.planIncludes(p.ids, &req.fs, now)
		res.page = p
		s.record(meterUser, op, 200, cnt, 0)
		s.bill(meterUser, app, op, now, p.includes.billed(p.ids))
	case OpGetFolder:
		f := u.folder(req.folderID)
		if f == nil {
			return fail(404, notFound("folder", "folder_id", req.folderID))
		}
		scope += "\x00" + req.folderID
		n := len(f.posts)
		off := min(req.off, n)
		cnt := min(off+req.max, n) - off
		if !s.creditsOK(cnt) {
			return fail(402, creditsBody)
		}
		p := &pageOut{kind: pageIDs, ids: make([]string, cnt)}
		for k := range cnt {
			p.ids[k] = f.posts[n-1-off-k]
		}
		if off+cnt < n {
			p.next = s.pageToken(scope, off+cnt)
		}
		if off > 0 {
			p.prev = s.pageToken(scope, max(0, off-req.max))
		}
		res.page = p
		s.record(meterUser, op, 200, cnt, 0)
		s.bill(meterUser, app, op, now, billed{posts: p.ids})
	case OpListFolders:
		n := len(u.folders)
		off := min(req.off, n)
		cnt := min(off+req.max, n) - off
		p := &pageOut{kind: pageFolders, folders: make([]Folder, cnt)}
		for k := range cnt {
			f := u.folders[off+k]
			p.folders[k] = Folder{ID: f.id, Name: f.name}
		}
		if off+cnt < n {
			p.next = s.pageToken(scope, off+cnt)
		}
		if off > 0 {
			p.prev = s.pageToken(scope, max(0, off-req.max))
		}
		res.page = p
		s.record(meterUser, op, 200, 0, cnt)
	case OpAddBookmark:
		s.bookmarkLocked(u, req.tweetID)
		res.body = []byte(`{"data":{"bookmarked":true}}`)
		s.record(meterUser, op, 200, 0, 0)
		s.billWrite(meterUser, op)
	case OpRemoveBookmark:
		s.unbookmarkLocked(u, req.tweetID)
		res.body = []byte(`{"data":{"bookmarked":false}}`)
		s.record(meterUser, op, 200, 0, 0)
		s.billWrite(meterUser, op)
	}
	return res
}

// ---- page encoding -----------------------------------------------------------------

func appendMeta(b []byte, count int, next, prev string) []byte {
	b = append(b, `"meta":{"result_count":`...)
	b = strconv.AppendInt(b, int64(count), 10)
	if next != "" {
		b = appendKeyStr(b, "next_token", next)
	}
	if prev != "" {
		b = appendKeyStr(b, "previous_token", prev)
	}
	return append(b, '}')
}

func (s *Server) encodePage(b []byte, p *pageOut) []byte {
	b = append(b, '{')
	switch p.kind {
	case pageFolders:
		if len(p.folders) > 0 {
			b = append(b, `"data":[`...)
			for i, f := range p.folders {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = appendStr(b, f.ID)
				b = appendKeyStr(b, "name", f.Name)
				b = append(b, '}')
			}
			b = append(b, "],"...)
		}
		b = appendMeta(b, len(p.folders), p.next, p.prev)
		return append(b, '}')
	case pageIDs:
		if len(p.ids) > 0 {
			b = append(b, `"data":[`...)
			for i, id := range p.ids {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = appendStr(b, id)
				b = append(b, '}')
			}
			b = append(b, "],"...)
		}
		b = appendMeta(b, len(p.ids), p.next, p.prev)
		return append(b, '}')
	}
	v := viewPool.Get().(*view)
	defer viewPool.Put(v)
	fs := &p.fs
	if len(p.ids) > 0 {
		b = append(b, `"data":[`...)
		for i, id := range p.ids {
			if i > 0 {
				b = append(b, ',')
			}
			s.fillView(v, id)
			b = appendPost(b, v, fs)
		}
		b = append(b, "],"...)
	}
	b = s.appendIncludes(b, p.includes, v, fs)
	var unavailable []refError
	if p.includes != nil {
		unavailable = p.includes.unavailable
	}
	if len(unavailable) > 0 || (len(fs.private) > 0 && len(p.ids) > 0) {
		b = append(b, `"errors":[`...)
		for i, e := range unavailable {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRefError(b, e, fs.posts)
		}
		b = s.appendPrivateErrors(b, p, len(unavailable))
		b = append(b, "],"...)
	}
	b = appendMeta(b, len(p.ids), p.next, p.prev)
	return append(b, '}')
}

// appendPrivateErrors adds a "Field Authorization Error" per post and
// private metric field asked for; n is the errors already in the array.
func (s *Server) appendPrivateErrors(b []byte, p *pageOut, n int) []byte {
	fs := &p.fs
	for _, id := range p.ids {
		for _, f := range fs.private {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"value":`...)
			b = appendStr(b, id)
			b = appendKeyStr(b, "detail", "Sorry, you are not authorized to access '"+f+"' on the Tweet with ids "+id+".")
			b = append(b, `,"title":"Field Authorization Error","resource_type":"tweet"`...)
			b = appendKeyStr(b, "field", f)
			b = appendKeyStr(b, "parameter", postFieldsParam(fs.posts))
			b = appendKeyStr(b, "resource_id", id)
			b = append(b, `,"section":"data","type":"https://api.x.com/2/problems/not-authorized-for-field"}`...)
		}
	}
	return b
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
