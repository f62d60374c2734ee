package media

import (
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/client"
)

// Kinds say which files of X's media objects are stored.
type Kinds struct {
	// Photos: a photo in its original size, and the still image of a
	// video or GIF.
	Photos bool
	// Videos: the mp4 variant of the highest bit rate of a video or GIF;
	// with AllVariants, every mp4 variant.
	Videos, AllVariants bool
}

func (k Kinds) On() bool { return k.Photos || k.Videos }

// What a file is to its media object.
const (
	FilePhoto = "photo"
	FileStill = "still" // a video's or GIF's preview image
	FileVideo = "video" // an mp4 variant of a video or GIF
)

// File is one file of a media object.
type File struct {
	// What is FilePhoto, FileStill or FileVideo.
	What string
	Request
}

// Files lists the files of m that k stores, each once.
func Files(m *client.Media, k Kinds) []File {
	var out []File
	add := func(what, u string) {
		if u != "" && !slices.ContainsFunc(out, func(f File) bool { return f.URL == u }) {
			out = append(out, File{What: what, Request: NewRequest(u)})
		}
	}
	if k.Photos {
		if m.Type == "photo" {
			add(FilePhoto, m.URL)
		}
		add(FileStill, m.PreviewImageURL)
	}
	if k.Videos && m.Type != "photo" {
		if k.AllVariants {
			for _, v := range m.Variants {
				if v.ContentType == "video/mp4" {
					add(FileVideo, v.URL)
				}
			}
		} else {
			add(FileVideo, BestVariant(m))
		}
	}
	return out
}

// NewRequest is the request of the file X names u: its original size
// first, for a photo or still on X's image host.
func NewRequest(u string) Request { return Request{URL: u, Prefer: original(u)} }

// BestVariant is the URL of the mp4 variant of m of the highest bit rate
// ("" for none). A GIF's one variant has bit rate 0.
func BestVariant(m *client.Media) string {
	best, rate := "", int64(-1)
	for _, v := range m.Variants {
		if v.ContentType == "video/mp4" && v.URL != "" && v.BitRate != nil && *v.BitRate > rate {
			best, rate = v.URL, *v.BitRate
		}
	}
	return best
}

// original is the URL of the original size of a photo or still on X's
// image host (docs/design/media.md#photos-in-their-original-size-mediaplango).
func original(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || u.Host != "pbs.twimg.com" || u.RawQuery != "" {
		return nil
	}
	ext := path.Ext(u.Path)
	switch ext {
	case ".jpg", ".jpeg", ".png", ".webp":
	default:
		return nil
	}
	u.Path = strings.TrimSuffix(u.Path, ext)
	u.RawQuery = url.Values{"format": {ext[1:]}, "name": {"orig"}}.Encode()
	return []string{u.String()}
}
