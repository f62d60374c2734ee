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
	mp4  boxWalk
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
	w.mp4.write(w.n, p)
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
		return w.mp4.ends(w.n)
	}
	return true
}

// boxWalk follows the top-level boxes of an ISO base media file (MP4).
type boxWalk struct {
	next   int64  // offset of the next box's header
	hdr    []byte // the bytes of that header seen so far
	toEnd  bool   // a box of size 0 runs to the end of the file
	broken bool   // a size smaller than its header
}

func (b *boxWalk) write(off int64, p []byte) {
	end := off + int64(len(p))
	for !b.toEnd && !b.broken {
		at := b.next + int64(len(b.hdr)) // the next byte of the header
		if at >= end {
			return
		}
		need := 8
		if len(b.hdr) >= 4 && binary.BigEndian.Uint32(b.hdr[:4]) == 1 {
			need = 16 // a 64-bit size follows the type
		}
		take := min(int64(need-len(b.hdr)), end-at)
		b.hdr = append(b.hdr, p[at-off:at-off+take]...)
		if len(b.hdr) < need || len(b.hdr) == 8 && binary.BigEndian.Uint32(b.hdr[:4]) == 1 {
			continue
		}
		size := int64(binary.BigEndian.Uint32(b.hdr[:4]))
		switch size {
		case 0:
			b.toEnd = true
		case 1:
			size = int64(binary.BigEndian.Uint64(b.hdr[8:16]))
		}
		if !b.toEnd && size < int64(need) {
			b.broken = true
		}
		b.next += size
		b.hdr = b.hdr[:0]
	}
}

func (b *boxWalk) ends(n int64) bool {
	return !b.broken && (b.toEnd || len(b.hdr) == 0 && b.next == n)
}
