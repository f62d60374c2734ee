package media

import (
	"bytes"
	"encoding/binary"
)

// wholeFile says whether the bytes written to it are a whole file of the
// format they start with: a body can end early with no error
// (docs/design/media.md#whole-files-mediawholego).
type wholeFile struct {
	n    int64
	head []byte // the first sniffLen bytes
	tail []byte // the last tailLen bytes
	// The top-level boxes of an MP4 (an ISO base media file), each of
	// which starts with its size.
	next   int64  // offset of the next box's header
	hdr    []byte // the bytes of that header seen so far
	toEnd  bool   // a box of size 0 runs to the end of the file
	broken bool   // a size smaller than its header
}

const (
	sniffLen = 512
	tailLen  = 32
)

func (w *wholeFile) Write(p []byte) (int, error) {
	if len(w.head) < sniffLen {
		w.head = append(w.head, p[:min(len(p), sniffLen-len(w.head))]...)
	}
	w.tail = append(w.tail, p[max(0, len(p)-tailLen):]...)
	if len(w.tail) > tailLen {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-tailLen:]...)
	}
	w.boxes(p)
	w.n += int64(len(p))
	return len(p), nil
}

func (w *wholeFile) whole() bool {
	h, t := w.head, w.tail
	switch {
	case bytes.HasPrefix(h, []byte("\xff\xd8\xff")): // JPEG
		return bytes.Contains(t, []byte("\xff\xd9"))
	case bytes.HasPrefix(h, []byte("\x89PNG\r\n\x1a\n")):
		return bytes.HasSuffix(t, []byte("\x00\x00\x00\x00IEND\xaeB`\x82"))
	case bytes.HasPrefix(h, []byte("GIF87a")) || bytes.HasPrefix(h, []byte("GIF89a")):
		return bytes.HasSuffix(t, []byte{0x3b})
	case len(h) >= 12 && string(h[:4]) == "RIFF" && string(h[8:12]) == "WEBP":
		return int64(binary.LittleEndian.Uint32(h[4:8]))+8 == w.n
	case len(h) >= 8 && string(h[4:8]) == "ftyp": // MP4 and other ISO media
		return !w.broken && (w.toEnd || len(w.hdr) == 0 && w.next == w.n)
	}
	return true
}

// boxes follows the MP4 boxes through p, the bytes after the first w.n.
func (w *wholeFile) boxes(p []byte) {
	off, end := w.n, w.n+int64(len(p))
	for !w.toEnd && !w.broken {
		at := w.next + int64(len(w.hdr)) // the next byte of the header
		if at >= end {
			return
		}
		need := 8
		if len(w.hdr) >= 4 && binary.BigEndian.Uint32(w.hdr[:4]) == 1 {
			need = 16 // a 64-bit size follows the type
		}
		take := min(int64(need-len(w.hdr)), end-at)
		w.hdr = append(w.hdr, p[at-off:at-off+take]...)
		if len(w.hdr) < need || len(w.hdr) == 8 && binary.BigEndian.Uint32(w.hdr[:4]) == 1 {
			continue
		}
		size := int64(binary.BigEndian.Uint32(w.hdr[:4]))
		switch size {
		case 0:
			w.toEnd = true
		case 1:
			size = int64(binary.BigEndian.Uint64(w.hdr[8:16]))
		}
		if !w.toEnd && size < int64(need) {
			w.broken = true
		}
		w.next += size
		w.hdr = w.hdr[:0]
	}
}
