package xsim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// mediaKey returns the first key of prefix ("3_", "7_", "16_") whose file
// has suffix.
func mediaKey(t *testing.T, prefix, suffix string) string {
	t.Helper()
	for i := 1; i < 1000; i++ {
		k := fmt.Sprintf("%s%d", prefix, 1000+i)
		if paths := MediaPaths(k); strings.HasSuffix(paths[len(paths)-1], suffix) {
			return k
		}
	}
	t.Fatalf("no key %s… with a file %s", prefix, suffix)
	return ""
}

func fetchMedia(t *testing.T, u string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// mp4Boxes lists the top-level boxes of an MP4, failing when their sizes do
// not add up to its length.
func mp4Boxes(t *testing.T, b []byte) []string {
	t.Helper()
	var types []string
	for off := 0; off < len(b); {
		if len(b)-off < 8 {
			t.Fatalf("%d bytes left at %d, too few for a box header", len(b)-off, off)
		}
		size := int(binary.BigEndian.Uint32(b[off:]))
		types = append(types, string(b[off+4:off+8]))
		if size < 8 || off+size > len(b) {
			t.Fatalf("box %s at %d has size %d in a file of %d bytes", types[len(types)-1], off, size, len(b))
		}
		off += size
	}
	return types
}

func TestTheMediaHostServesRealFilesOfTheirSize(t *testing.T) {
	sizes := map[string]int64{}
	s := newSim(t, Options{MediaSize: func(p string) int64 { return sizes[p] }})
	for _, c := range []struct {
		key, suffix, contentType string
	}{
		{mediaKey(t, "3_", ".jpg"), ".jpg", "image/jpeg"},
		{mediaKey(t, "3_", ".png"), ".png", "image/png"},
		{mediaKey(t, "7_", ".mp4"), ".mp4", "video/mp4"},
		{mediaKey(t, "16_", ".mp4"), ".mp4", "video/mp4"},
	} {
		for _, size := range []int64{50 << 10, 3<<20 + 7} {
			path := MediaPaths(c.key)[0]
			if c.suffix == ".mp4" {
				path = mediaFilesOf(c.key).variants[0].path
			}
			sizes[path] = size
			resp, body, err := fetchMedia(t, s.MediaURL()+path)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: %d, %v", path, resp.StatusCode, err)
			}
			if got := resp.Header.Get("Content-Type"); got != c.contentType {
				t.Errorf("%s: Content-Type %s, want %s", path, got, c.contentType)
			}
			if int64(len(body)) != size || resp.ContentLength != size {
				t.Errorf("%s: %d bytes (Content-Length %d), want %d", path, len(body), resp.ContentLength, size)
			}
			if c.suffix == ".mp4" {
				if boxes := mp4Boxes(t, body); strings.Join(boxes, " ") != "ftyp moov mdat" {
					t.Errorf("%s: boxes %v", path, boxes)
				}
				continue
			}
			img, format, err := image.Decode(bytes.NewReader(body))
			if err != nil || img.Bounds().Dx() != 48 || "."+format != strings.Replace(c.suffix, "jpg", "jpeg", 1) {
				t.Errorf("%s does not decode as %s: %s, %v", path, c.suffix, format, err)
			}
			_, again, _ := fetchMedia(t, s.MediaURL()+path+"?format=jpg&name=orig")
			if !bytes.Equal(body, again) {
				t.Errorf("%s: name=orig serves other bytes", path)
			}
		}
	}
}

func TestTheAPINamesTheMediaHostsFiles(t *testing.T) {
	s, tok := newSimUser(t, Options{})
	id := ""
	for i := range 200 {
		p := s.PostContent(fmt.Sprint(1_700_000_000_000_000_000 + i))
		if len(p.MediaKeys) > 0 {
			id = p.ID
			break
		}
	}
	if err := s.Bookmark("1", id); err != nil {
		t.Fatal(err)
	}
	r := get(t, s, "/2/users/1/bookmarks?expansions=attachments.media_keys&media.fields=url,variants,preview_image_url", tok)
	m := r.obj(t)
	media := m["includes"].(map[string]any)["media"].([]any)
	for _, x := range media {
		obj := x.(map[string]any)
		for _, k := range []string{"url", "preview_image_url"} {
			if u, ok := obj[k].(string); ok && !strings.HasPrefix(u, s.MediaURL()+"/") {
				t.Errorf("%s %s is not on the media host", k, u)
			}
		}
		vs, _ := obj["variants"].([]any)
		for _, v := range vs {
			u := v.(map[string]any)["url"].(string)
			if resp, _, err := fetchMedia(t, u); err != nil || resp.StatusCode != 200 {
				t.Errorf("variant %s: %d, %v", u, resp.StatusCode, err)
			}
		}
	}
}

func TestMediaFaults(t *testing.T) {
	s := newSim(t, Options{MediaSize: func(string) int64 { return 100 << 10 }})
	path := func(i int) string { return MediaPaths(fmt.Sprintf("3_%d", 500+i))[0] }
	for i, status := range []int{404, 410, 403, 500} {
		s.SetMediaFault(path(i), MediaFault{Status: status})
		if resp, _, _ := fetchMedia(t, s.MediaURL()+path(i)); resp.StatusCode != status {
			t.Errorf("Status %d: answered %d", status, resp.StatusCode)
		}
	}
	s.SetMediaFault(path(10), MediaFault{Status: 503, Times: 1})
	first, _, _ := fetchMedia(t, s.MediaURL()+path(10))
	second, _, _ := fetchMedia(t, s.MediaURL()+path(10))
	if first.StatusCode != 503 || second.StatusCode != 200 {
		t.Errorf("Times 1: %d then %d, want 503 then 200", first.StatusCode, second.StatusCode)
	}
	s.SetMediaFault(path(11), MediaFault{CutAfter: 1000})
	if _, body, err := fetchMedia(t, s.MediaURL()+path(11)); !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 1000 {
		t.Errorf("CutAfter 1000: %d bytes, %v; want 1000 and an unexpected EOF", len(body), err)
	}
	s.SetMediaFault(path(12), MediaFault{Length: 5000})
	if resp, body, err := fetchMedia(t, s.MediaURL()+path(12)); err != nil || len(body) != 5000 || resp.ContentLength != 5000 {
		t.Errorf("Length 5000 of a 100 KB file: %d bytes, %v", len(body), err)
	}
	s.SetMediaFault(path(13), MediaFault{Length: 200 << 10})
	if _, body, err := fetchMedia(t, s.MediaURL()+path(13)); !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 100<<10 {
		t.Errorf("Length 200 KB of a 100 KB file: %d bytes, %v", len(body), err)
	}
	s.SetMediaFault(path(14), MediaFault{RedirectTo: path(15)})
	if resp, body, err := fetchMedia(t, s.MediaURL()+path(14)); err != nil || resp.Request.URL.Path != path(15) || len(body) != 100<<10 {
		t.Errorf("RedirectTo: ended at %s with %d bytes, %v", resp.Request.URL.Path, len(body), err)
	}
	s.SetMediaFault(path(16), MediaFault{Size: 200 << 20})
	resp, err := http.Head(s.MediaURL() + path(16))
	if err != nil || resp.ContentLength != 200<<20 {
		t.Errorf("Size 200 MB: Content-Length %d, %v", resp.ContentLength, err)
	}
	s.SetMediaFault(path(17), MediaFault{Rate: 400 << 10})
	if _, body, err := fetchMedia(t, s.MediaURL()+path(17)); err != nil || len(body) != 100<<10 {
		t.Errorf("Rate: %d bytes, %v", len(body), err)
	}
	s.SetMediaFault(path(18), MediaFault{Length: -1})
	if resp, body, err := fetchMedia(t, s.MediaURL()+path(18)); err != nil || resp.ContentLength != -1 || len(body) != 100<<10 {
		t.Errorf("Length -1: Content-Length %d, %d bytes, %v", resp.ContentLength, len(body), err)
	}
}

func TestTheMediaOfADeletedPostAreGone(t *testing.T) {
	s := newSim(t, Options{})
	var p Post
	for i := range 2000 {
		p = s.PostContent(fmt.Sprint(1_700_000_000_000_000_000 + i))
		if len(p.MediaKeys) > 0 && strings.HasPrefix(p.MediaKeys[0], "7_") {
			break
		}
	}
	paths := MediaPaths(p.MediaKeys[0])
	if err := s.DeletePost(p.ID); err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		want := 404
		if strings.HasSuffix(path, ".mp4") {
			want = 410
		}
		if resp, _, _ := fetchMedia(t, s.MediaURL()+path); resp.StatusCode != want {
			t.Errorf("%s of a deleted post: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestTheMediaHostRecordsEachRequestsAuthorization(t *testing.T) {
	s := newSim(t, Options{})
	path := MediaPaths("3_42")[0]
	req, _ := http.NewRequest("GET", s.MediaURL()+path, nil)
	req.Header.Set("Authorization", "Bearer leaked")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	fetchMedia(t, s.MediaURL()+path)
	got := s.MediaRequests()
	if len(got) != 2 || got[0].Authorization != "Bearer leaked" || got[1].Authorization != "" || got[0].Path != path {
		t.Fatalf("requests %+v", got)
	}
}

func TestTheMediaHostsLinkCarriesAtMostItsBandwidth(t *testing.T) {
	s := newSim(t, Options{MediaSize: func(string) int64 { return 1 << 20 }, MediaBandwidth: 8 << 20})
	start := time.Now()
	done := make(chan int, 2)
	for _, k := range []string{"3_1", "3_2"} {
		go func() {
			_, body, err := fetchMedia(t, s.MediaURL()+MediaPaths(k)[0])
			if err != nil {
				t.Error(err)
			}
			done <- len(body)
		}()
	}
	n := <-done + <-done
	// Two 1 MB files over 8 MB/s, together: at least a quarter second.
	if elapsed := time.Since(start); n != 2<<20 || elapsed < 240*time.Millisecond {
		t.Fatalf("%d bytes in %s over a link of 8 MB/s", n, elapsed)
	}
}
