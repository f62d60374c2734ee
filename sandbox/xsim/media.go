package xsim

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The media host serves the photos and videos of the posts, on its own
// loopback port as X's CDN (pbs.twimg.com, video.twimg.com) is a host of
// its own, at paths of the same shape: /media/<code>.jpg (or .png),
// /ext_tw_video/<id>/pu/vid/1280x720/<code>.mp4 and its still
// /ext_tw_video_thumb/<id>/pu/img/<code>.jpg, /tweet_video/<code>.mp4 and
// /tweet_video_thumb/<code>.jpg for GIFs. Once it is started, the media
// objects of the API name its URLs (before, X's). Files are made from
// their path, so the same path always serves the same bytes: a real JPEG
// or PNG (a small picture, and comment or ancillary chunks that bring it
// to its size) or an MP4 container (ftyp, moov, and an mdat of filler),
// streamed, so a file of any size costs no memory. Photos ask for
// ?name=orig as X's do and are served the same. Faults are set per file
// (SetMediaFault); the media of a post deleted with DeletePost answer 404
// (photos, stills) and 410 (videos).

// MediaFault changes how the media host serves one file.
type MediaFault struct {
	// Status answers with this status and no file (404, 410, 403, 500, ...).
	Status int
	// Times limits the fault to the first Times requests of the file; 0:
	// every request.
	Times int
	// Delay waits before the answer's headers.
	Delay time.Duration
	// Rate sends the body at most this many bytes per second (a slow body).
	Rate int
	// CutAfter drops the connection after this many bytes of the body.
	CutAfter int64
	// Length announces this Content-Length instead of the file's size, and
	// sends no more than it (a wrong Content-Length; -1: none announced).
	Length int64
	// RedirectTo answers 302 Found to this URL (a path is on the host).
	RedirectTo string
	// Size serves the file at this size instead (a huge file).
	Size int64
}

// MediaRequest is a request the media host received.
type MediaRequest struct {
	Path, RawQuery string
	// Authorization is the request's Authorization header ("" for none).
	Authorization string
}

type mediaHost struct {
	srv  *http.Server
	url  string
	size func(path string) int64
	link *link // nil: as fast as loopback goes

	mu       sync.Mutex
	faults   map[string]*MediaFault // by path
	served   map[string]int         // requests per path
	requests []MediaRequest
}

// MediaURL is the base URL of the media host ("" before Start).
func (s *Server) MediaURL() string { return s.media.url }

// SetMediaFault sets the fault of the file at path (a path of the host, or
// a URL of it); the zero MediaFault clears it.
func (s *Server) SetMediaFault(path string, f MediaFault) {
	path = strings.TrimPrefix(path, s.media.url)
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	s.media.mu.Lock()
	defer s.media.mu.Unlock()
	if f == (MediaFault{}) {
		delete(s.media.faults, path)
		return
	}
	s.media.faults[path] = &f
	s.media.served[path] = 0
}

// MediaPaths returns the paths of the files of media key: a photo's, or a
// video's or GIF's variants and still.
func MediaPaths(key string) []string { return mediaFilesOf(key).paths() }

// MediaRequests returns the requests the media host received, oldest first.
func (s *Server) MediaRequests() []MediaRequest {
	s.media.mu.Lock()
	defer s.media.mu.Unlock()
	return append([]MediaRequest(nil), s.media.requests...)
}

// deleteMedia makes the files of a deleted post's media gone.
func (s *Server) deleteMedia(postID string) {
	p := s.PostContent(postID)
	keys := append([]string(nil), p.MediaKeys...)
	if p.Article != nil {
		keys = append(append(keys, p.Article.CoverMedia), p.Article.MediaEntities...)
	}
	s.media.mu.Lock()
	defer s.media.mu.Unlock()
	for _, k := range keys {
		f := mediaFilesOf(k)
		for _, path := range f.paths() {
			status := http.StatusNotFound
			if strings.HasSuffix(path, ".mp4") {
				status = http.StatusGone
			}
			s.media.faults[path] = &MediaFault{Status: status}
		}
	}
}

// mediaFiles are the paths of one media object's files.
type mediaFiles struct {
	photo, still, playlist string
	variants               []variant // mp4 files, lowest bit rate first
}

type variant struct {
	bitRate int64
	path    string
}

func (f mediaFiles) paths() []string {
	var out []string
	for _, p := range []string{f.photo, f.still, f.playlist} {
		if p != "" {
			out = append(out, p)
		}
	}
	for _, v := range f.variants {
		out = append(out, v.path)
	}
	return out
}

// mediaFilesOf derives the paths of a media key's files, as X's CDN names
// them: a video has three mp4 variants and a playlist, a GIF one mp4 of
// bit rate 0.
func mediaFilesOf(key string) mediaFiles {
	if key == "" {
		return mediaFiles{}
	}
	h := hash64(key)
	id := key[strings.IndexByte(key, '_')+1:]
	code := string(appendCode(nil, h>>16, 15))
	switch {
	case strings.HasPrefix(key, "7_"):
		f := mediaFiles{
			playlist: "/ext_tw_video/" + id + "/pu/pl/" + code + ".m3u8",
			still:    "/ext_tw_video_thumb/" + id + "/pu/img/" + code + ".jpg",
		}
		for _, v := range []struct {
			rate int64
			res  string
		}{{632000, "480x270"}, {950000, "640x360"}, {2176000, "1280x720"}} {
			f.variants = append(f.variants, variant{v.rate, "/ext_tw_video/" + id + "/pu/vid/" + v.res + "/" + code + ".mp4"})
		}
		return f
	case strings.HasPrefix(key, "16_"):
		return mediaFiles{variants: []variant{{0, "/tweet_video/" + code + ".mp4"}}, still: "/tweet_video_thumb/" + code + ".jpg"}
	}
	ext := ".jpg"
	if h%7 == 0 {
		ext = ".png"
	}
	return mediaFiles{photo: "/media/" + code + ext}
}

// mediaBase is the base of media URLs: the host's, or X's before Start.
func (s *Server) mediaBase(video bool) string {
	switch {
	case s.media.url != "":
		return s.media.url
	case video:
		return "https://video.twimg.com"
	}
	return "https://pbs.twimg.com"
}

func newMediaHost(size func(string) int64, bandwidth int64) *mediaHost {
	if size == nil {
		size = defaultMediaSize
	}
	m := &mediaHost{size: size, faults: map[string]*MediaFault{}, served: map[string]int{}}
	if bandwidth > 0 {
		m.link = &link{rate: bandwidth}
	}
	return m
}

// link is a connection of a given bandwidth that every response shares, as
// a download's bytes share the downloader's link.
type link struct {
	rate int64 // bytes per second

	mu   sync.Mutex
	free time.Time // when the link has sent what it was given
}

// send waits until the link has carried n more bytes.
func (l *link) send(n int) {
	l.mu.Lock()
	now := time.Now()
	start := l.free
	if start.Before(now) {
		start = now
	}
	l.free = start.Add(time.Duration(int64(n) * int64(time.Second) / l.rate))
	done := l.free
	l.mu.Unlock()
	time.Sleep(time.Until(done))
}

// defaultMediaSize keeps the files small: photos of 2 to 40 KB, videos of
// 50 to 300 KB.
func defaultMediaSize(path string) int64 {
	h := hash64(path)
	if strings.HasSuffix(path, ".mp4") {
		return 50<<10 + int64(h%(250<<10))
	}
	return 2<<10 + int64(h%(38<<10))
}

// startMedia serves the media host on its own loopback port.
func (s *Server) startMedia() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.media.srv = &http.Server{Handler: http.HandlerFunc(s.media.serve), ReadHeaderTimeout: 10 * time.Second}
	s.media.url = "http://" + ln.Addr().String()
	go func() { _ = s.media.srv.Serve(ln) }()
	return nil
}

func (s *Server) closeMedia() {
	if s.media.srv != nil {
		_ = s.media.srv.Close()
	}
}

// fault returns the fault of a request of path, and records the request.
func (m *mediaHost) fault(r *http.Request) MediaFault {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, MediaRequest{Path: r.URL.Path, RawQuery: r.URL.RawQuery, Authorization: r.Header.Get("Authorization")})
	f := m.faults[r.URL.Path]
	if f == nil {
		return MediaFault{}
	}
	m.served[r.URL.Path]++
	if f.Times > 0 && m.served[r.URL.Path] > f.Times {
		return MediaFault{}
	}
	return *f
}

func (m *mediaHost) serve(w http.ResponseWriter, r *http.Request) {
	f := m.fault(r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	switch {
	case f.RedirectTo != "":
		http.Redirect(w, r, f.RedirectTo, http.StatusFound)
		return
	case f.Status != 0:
		http.Error(w, http.StatusText(f.Status), f.Status)
		return
	}
	kind := mediaKind(r.URL.Path)
	if kind == "" {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	size := m.size(r.URL.Path)
	if f.Size > 0 {
		size = f.Size
	}
	body := newMediaFile(kind, hash64(r.URL.Path), size)
	n := body.size
	switch {
	case f.Length < 0:
		n = -1
	case f.Length > 0:
		n = f.Length
	}
	w.Header().Set("Content-Type", mediaContentTypes[kind])
	if n >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	w.Header().Set("Cache-Control", "max-age=604800")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	var src io.Reader = body
	if n >= 0 && n < body.size {
		src = io.LimitReader(body, n) // the server sends no more than it announced
	}
	if f.CutAfter > 0 {
		src = io.LimitReader(src, f.CutAfter)
	}
	m.send(w, src, f.Rate)
	if f.CutAfter > 0 || n > body.size {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush() // what was sent reaches the client before the connection drops
		}
		panic(http.ErrAbortHandler) // drop the connection with the body unfinished
	}
}

// send copies src to w, at most rate bytes a second when rate > 0, and
// through the host's link.
func (m *mediaHost) send(w http.ResponseWriter, src io.Reader, rate int) {
	chunk := 64 << 10
	if rate > 0 {
		chunk = max(1, min(chunk, rate/10))
	}
	buf := make([]byte, chunk)
	flusher, _ := w.(http.Flusher)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if m.link != nil {
				m.link.send(k)
			}
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
			if rate > 0 {
				if flusher != nil {
					flusher.Flush()
				}
				time.Sleep(time.Duration(k) * time.Second / time.Duration(rate))
			}
		}
		if err != nil {
			return
		}
	}
}

var mediaContentTypes = map[string]string{
	"jpg":  "image/jpeg",
	"png":  "image/png",
	"mp4":  "video/mp4",
	"m3u8": "application/x-mpegURL",
}

// mediaKind is the format of the file at path: jpg, png, mp4, m3u8, or ""
// for a path the host has no file at.
func mediaKind(path string) string {
	switch {
	case strings.HasPrefix(path, "/media/") || strings.HasPrefix(path, "/ext_tw_video_thumb/") || strings.HasPrefix(path, "/tweet_video_thumb/"):
		if strings.HasSuffix(path, ".png") {
			return "png"
		}
		if strings.HasSuffix(path, ".jpg") {
			return "jpg"
		}
	case strings.HasPrefix(path, "/ext_tw_video/") || strings.HasPrefix(path, "/tweet_video/"):
		if strings.HasSuffix(path, ".mp4") {
			return "mp4"
		}
		if strings.HasSuffix(path, ".m3u8") {
			return "m3u8"
		}
	}
	return ""
}

// mediaFile streams a generated file: a head and a tail around padding
// made of chunks, each with its own framing.
type mediaFile struct {
	size  int64
	parts []io.Reader
}

func (f *mediaFile) Read(p []byte) (int, error) {
	for len(f.parts) > 0 {
		n, err := f.parts[0].Read(p)
		if err == io.EOF {
			f.parts = f.parts[1:]
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
	return 0, io.EOF
}

// newMediaFile makes a file of kind of about size bytes (exactly, when
// size is above the format's smallest file) from seed.
func newMediaFile(kind string, seed uint64, size int64) *mediaFile {
	switch kind {
	case "jpg":
		pic := smallPicture(seed, "jpg")
		// SOI, then comment segments (FF FE, 2-byte length, at most 65533
		// bytes), then the rest of the picture.
		return padded(pic[:2], pic[2:], size, 4, 65533, seed, func(n int) []byte {
			return []byte{0xff, 0xfe, byte((n + 2) >> 8), byte(n + 2)}
		}, nil)
	case "png":
		pic := smallPicture(seed, "png")
		// Before IEND, private ancillary chunks "fiLl" that readers skip.
		cut := len(pic) - 12
		return padded(pic[:cut], pic[cut:], size, 12, 64<<10, seed, func(n int) []byte {
			return append(binary.BigEndian.AppendUint32(nil, uint32(n)), "fiLl"...)
		}, pngCRC)
	case "mp4":
		head := mp4Head()
		mdat := max(size-int64(len(head)), 8)
		hdr := binary.BigEndian.AppendUint32(nil, uint32(mdat))
		hdr = append(hdr, "mdat"...)
		return &mediaFile{size: int64(len(head)) + mdat, parts: []io.Reader{bytes.NewReader(head), bytes.NewReader(hdr), newFiller(seed, mdat-8)}}
	}
	pl := []byte("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-STREAM-INF:BANDWIDTH=2176000,RESOLUTION=1280x720\nvid/1280x720/0.m3u8\n")
	return &mediaFile{size: int64(len(pl)), parts: []io.Reader{bytes.NewReader(pl)}}
}

// padded is head, padding chunks, then tail, of size bytes in all when
// size leaves room for one chunk: each chunk is its header (hdr of its
// data's length), overhead bytes of framing in all, at most maxData bytes
// of filler, and what trailer adds after the data (nil: nothing).
func padded(head, tail []byte, size int64, overhead, maxData int, seed uint64, hdr func(n int) []byte, trailer func(data []byte) []byte) *mediaFile {
	f := &mediaFile{parts: []io.Reader{bytes.NewReader(head)}}
	pad := size - int64(len(head)+len(tail))
	if pad >= int64(overhead) {
		chunks := (pad + int64(maxData+overhead) - 1) / int64(maxData+overhead)
		for i := range chunks {
			total := pad / chunks
			if i < pad%chunks {
				total++
			}
			n := int(total) - overhead
			var data io.Reader = newFiller(seed+uint64(i), int64(n))
			if trailer != nil {
				// The trailer (a CRC) needs the data: chunks are small.
				b := make([]byte, n)
				io.ReadFull(data, b)
				data = io.MultiReader(bytes.NewReader(b), bytes.NewReader(trailer(b)))
			}
			f.parts = append(f.parts, bytes.NewReader(hdr(n)), data)
		}
	} else {
		pad = 0
	}
	f.parts = append(f.parts, bytes.NewReader(tail))
	f.size = int64(len(head)+len(tail)) + pad
	return f
}

// pngCRC is the CRC that ends a "fiLl" chunk of data: of its type and data.
func pngCRC(data []byte) []byte {
	crc := crc32.NewIEEE()
	crc.Write([]byte("fiLl"))
	crc.Write(data)
	return binary.BigEndian.AppendUint32(nil, crc.Sum32())
}

// smallPicture is a 48×32 picture of a colour of seed, encoded.
func smallPicture(seed uint64, format string) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 48, 32))
	c := color.RGBA{R: uint8(seed), G: uint8(seed >> 8), B: uint8(seed >> 16), A: 255}
	for y := range 32 {
		for x := range 48 {
			img.Set(x, y, color.RGBA{R: c.R + uint8(x*3), G: c.G + uint8(y*5), B: c.B, A: 255})
		}
	}
	var b bytes.Buffer
	if format == "png" {
		png.Encode(&b, img)
	} else {
		jpeg.Encode(&b, img, &jpeg.Options{Quality: 80})
	}
	return b.Bytes()
}

// mp4Head is an MP4's ftyp and moov boxes: the brand, and a movie header
// of a 10-second movie with no tracks.
func mp4Head() []byte {
	b := binary.BigEndian.AppendUint32(nil, 24)
	b = append(b, "ftypisom"...)
	b = binary.BigEndian.AppendUint32(b, 0x200)
	b = append(b, "isommp41"...)
	mvhd := make([]byte, 100)
	binary.BigEndian.PutUint32(mvhd[12:], 1000)                               // timescale
	binary.BigEndian.PutUint32(mvhd[16:], 10000)                              // duration
	binary.BigEndian.PutUint32(mvhd[20:], 1<<16)                              // rate 1.0
	binary.BigEndian.PutUint16(mvhd[24:], 1<<8)                               // volume 1.0
	for i, v := range []uint32{1 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30} { // identity matrix
		binary.BigEndian.PutUint32(mvhd[36+4*i:], v)
	}
	binary.BigEndian.PutUint32(mvhd[96:], 1) // next track id
	b = binary.BigEndian.AppendUint32(b, 8+8+100)
	b = append(b, "moov"...)
	b = binary.BigEndian.AppendUint32(b, 8+100)
	b = append(b, "mvhd"...)
	return append(b, mvhd...)
}

// filler is n bytes that do not compress, made from seed.
type filler struct {
	x    uint64
	left int64
}

func newFiller(seed uint64, n int64) *filler { return &filler{x: seed | 1, left: n} }

func (f *filler) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.left)) &^ 7
	if n == 0 {
		n = int(min(int64(len(p)), f.left))
		for i := range n {
			p[i] = byte(f.next())
		}
		f.left -= int64(n)
		return n, nil
	}
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], f.next())
	}
	f.left -= int64(n)
	return n, nil
}

func (f *filler) next() uint64 {
	f.x ^= f.x << 13
	f.x ^= f.x >> 7
	f.x ^= f.x << 17
	return f.x
}
