// Package browse serves a read-only web page of an exporter's archive, read
// through archive.Snapshot, on a loopback address (`cq-source-x browse`);
// docs/browse.md says what it shows and why what it serves stays on the
// machine.
package browse

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/internal/bearer"
	"github.com/cq-source-x/cq-source-x/internal/plural"
)

//go:embed assets
var assets embed.FS

type Server struct {
	dir string

	mu      sync.Mutex
	lib     *library
	version string // archive.Version of lib's load
}

// Open reads the archive in dir (an exporter's output directory).
func Open(dir string) (*Server, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not an archive: no such directory", abs)
	}
	s := &Server{dir: abs}
	if _, err := s.library(); err != nil {
		return nil, err
	}
	return s, nil
}

// Bookmarks is the number of bookmarks the archive held when last read.
func (s *Server) Bookmarks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lib.bookmarks)
}

// library is the archive as last read, read again when an export,
// compliance action or repair changed it since.
func (s *Server) library() (*library, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := archive.Version(s.dir); s.lib == nil || v != s.version {
		lib, err := load(s.dir)
		if err != nil {
			return nil, err
		}
		s.lib, s.version = lib, v
	}
	return s.lib, nil
}

// Serve answers on ln, which must be a loopback address, until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil || !bearer.Loopback(host) {
		return fmt.Errorf("browse serves on a loopback address only, not %s", ln.Addr())
	}
	srv := &http.Server{Handler: s.handler(port), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler answers requests for a loopback host on port (no other name:
// DNS rebinding): the page, its stylesheet and the media files.
func (s *Server) handler(port string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if host, p, err := net.SplitHostPort(r.Host); err != nil || p != port || !bearer.Loopback(host) {
			http.Error(w, "This server answers only requests for its loopback address, such as 127.0.0.1:"+port+".", http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "The archive is read-only.", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case r.URL.Path == "/":
			s.page(w, r)
		case r.URL.Path == "/assets/style.css":
			http.ServeFileFS(w, r, assets, "assets/style.css")
		case strings.HasPrefix(r.URL.Path, "/media/"):
			s.media(w, r, strings.TrimPrefix(r.URL.Path, "/media/"))
		default:
			http.NotFound(w, r)
		}
	})
}

// media serves the file name of DIR/media, if it is one: a relative path
// that does not leave the directory, by its name or by a link.
func (s *Server) media(w http.ResponseWriter, r *http.Request, name string) {
	if !fs.ValidPath(name) || strings.Contains(name, `\`) || name == "." {
		http.Error(w, "Not a media file's name.", http.StatusBadRequest)
		return
	}
	f, err := os.OpenInRoot(archive.MediaPath(s.dir), filepath.FromSlash(name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "private, max-age=86400, immutable") // named by their content's hash
	http.ServeContent(w, r, path.Base(name), fi.ModTime(), f)
}

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"date": func(t time.Time) string { return t.Local().Format("2006-01-02 15:04") },
	"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"reason": func(r string) string {
		if r == "" {
			return "withdrawn"
		}
		return r
	},
	"refType": func(t string) string {
		return map[string]string{"quoted": "Quotes", "replied_to": "Replies to", "retweeted": "Reposts"}[t]
	},
}).ParseFS(assets, "assets/page.html"))

type pageData struct {
	Dir          string
	Query        query
	Filtered     bool
	Accounts     []string
	Folders      []folder // of the account chosen (or of the only one)
	Count        string
	Bookmarks    []*bookmark
	Newer, Older string
}

// page answers /?q=...: a page of the bookmarks the query asks for.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	lib, err := s.library()
	if err != nil {
		http.Error(w, "Reading the archive: "+err.Error(), http.StatusInternalServerError)
		return
	}
	found := lib.search(q)
	d := pageData{Dir: s.dir, Query: q, Filtered: q.filtered(), Accounts: lib.accounts}
	if account := q.Account; account != "" || len(lib.accounts) == 1 {
		if account == "" {
			account = lib.accounts[0]
		}
		d.Folders = lib.folders[account]
	}
	first := min((q.Page-1)*perPage, len(found))
	d.Bookmarks = found[first:min(first+perPage, len(found))]
	if q.Page > 1 {
		d.Newer = q.with("page", fmt.Sprint(q.Page-1))
	}
	if first+perPage < len(found) {
		d.Older = q.with("page", fmt.Sprint(q.Page+1))
	}
	all := plural.Count(len(lib.bookmarks), "bookmark", "bookmarks")
	if d.Filtered {
		d.Count = fmt.Sprintf("%d of %s", len(found), all)
	} else {
		d.Count = all + ", newest bookmarked first"
	}
	if len(found) > perPage {
		d.Count += fmt.Sprintf(" · %d–%d shown", first+1, first+len(d.Bookmarks))
	}
	var b bytes.Buffer
	if err := page.Execute(&b, d); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
