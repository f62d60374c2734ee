package media

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func box(typ string, payload int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+payload))
	return append(append(b, typ...), make([]byte, payload)...)
}

func largeBox(typ string, payload int) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1)
	b = append(b, typ...)
	b = binary.BigEndian.AppendUint64(b, uint64(16+payload))
	return append(b, make([]byte, payload)...)
}

func TestAFileIsWholeWhenItsFormatSaysItEndsWhereItEnds(t *testing.T) {
	jpeg := append(append([]byte("\xff\xd8\xff\xe0"), bytes.Repeat([]byte{7}, 1000)...), 0xff, 0xd9)
	png := append(append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 1000)...), "\x00\x00\x00\x00IEND\xaeB`\x82"...)
	gif := append(append([]byte("GIF89a"), bytes.Repeat([]byte{7}, 100)...), 0x3b)
	webp := append([]byte("RIFF\x00\x00\x00\x00WEBP"), make([]byte, 88)...)
	binary.LittleEndian.PutUint32(webp[4:], uint32(len(webp)-8))
	mp4 := append(append(append(box("ftyp", 16), box("moov", 100)...), largeBox("mdat", 5000)...), box("free", 3)...)
	toEnd := append(box("ftyp", 16), 0, 0, 0, 0, 'm', 'd', 'a', 't', 1, 2, 3)
	for name, file := range map[string][]byte{"jpeg": jpeg, "png": png, "gif": gif, "webp": webp, "mp4": mp4, "mp4 with a last box to the end": toEnd} {
		for _, chunk := range []int{1, 3, 7, 64, 1 << 20} {
			for _, cut := range []int{0, 1, 5, 13} {
				if cut >= len(file) {
					continue
				}
				var w wholeFile
				data := file[:len(file)-cut]
				for i := 0; i < len(data); i += chunk {
					w.Write(data[i:min(i+chunk, len(data))])
				}
				want := cut == 0 || name == "mp4 with a last box to the end" && cut <= 3 // its header whole
				if got := w.whole(); got != want {
					t.Errorf("%s cut by %d, written %d bytes at a time: whole = %v, want %v", name, cut, chunk, got, want)
				}
			}
		}
	}
}

func TestABrokenMP4IsNotWhole(t *testing.T) {
	var w wholeFile
	w.Write(append(box("ftyp", 16), 0, 0, 0, 3, 'b', 'a', 'd', '!'))
	if w.whole() {
		t.Fatal("a box of size 3 is not an MP4")
	}
}

func TestFormatsNotKnownAreTakenAsTheyCome(t *testing.T) {
	var w wholeFile
	w.Write([]byte("some other format"))
	if !w.whole() {
		t.Fatal("not whole")
	}
}
