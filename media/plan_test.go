package media

import (
	"reflect"
	"testing"

	"github.com/cq-source-x/cq-source-x/client"
)

func rate(n int64) *int64 { return &n }

var (
	aPhoto = &client.Media{MediaKey: "3_1", Type: "photo", URL: "https://pbs.twimg.com/media/Abc.jpg"}
	aVideo = &client.Media{MediaKey: "7_2", Type: "video", PreviewImageURL: "https://pbs.twimg.com/ext_tw_video_thumb/2/pu/img/Def.jpg",
		Variants: []client.Variant{
			{BitRate: rate(632000), ContentType: "video/mp4", URL: "https://video.twimg.com/ext_tw_video/2/pu/vid/480x270/Def.mp4"},
			{BitRate: rate(2176000), ContentType: "video/mp4", URL: "https://video.twimg.com/ext_tw_video/2/pu/vid/1280x720/Def.mp4"},
			{ContentType: "application/x-mpegURL", URL: "https://video.twimg.com/ext_tw_video/2/pu/pl/Def.m3u8"},
		}}
	aGIF = &client.Media{MediaKey: "16_3", Type: "animated_gif", PreviewImageURL: "https://pbs.twimg.com/tweet_video_thumb/Ghi.jpg",
		Variants: []client.Variant{{BitRate: rate(0), ContentType: "video/mp4", URL: "https://video.twimg.com/tweet_video/Ghi.mp4"}}}
)

func urls(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.What+" "+f.URL)
	}
	return out
}

func TestTheKindsSayWhichFilesOfAMediaObjectAreStored(t *testing.T) {
	for _, c := range []struct {
		m    *client.Media
		k    Kinds
		want []string
	}{
		{aPhoto, Kinds{Photos: true}, []string{"photo https://pbs.twimg.com/media/Abc.jpg"}},
		{aPhoto, Kinds{Videos: true}, nil},
		{aVideo, Kinds{Photos: true}, []string{"still https://pbs.twimg.com/ext_tw_video_thumb/2/pu/img/Def.jpg"}},
		{aVideo, Kinds{Videos: true}, []string{"video https://video.twimg.com/ext_tw_video/2/pu/vid/1280x720/Def.mp4"}},
		{aVideo, Kinds{Photos: true, Videos: true, AllVariants: true}, []string{
			"still https://pbs.twimg.com/ext_tw_video_thumb/2/pu/img/Def.jpg",
			"video https://video.twimg.com/ext_tw_video/2/pu/vid/480x270/Def.mp4",
			"video https://video.twimg.com/ext_tw_video/2/pu/vid/1280x720/Def.mp4"}},
		{aGIF, Kinds{Photos: true, Videos: true}, []string{
			"still https://pbs.twimg.com/tweet_video_thumb/Ghi.jpg",
			"video https://video.twimg.com/tweet_video/Ghi.mp4"}},
		{&client.Media{MediaKey: "3_4", Type: "photo"}, Kinds{Photos: true}, nil},
	} {
		if got := urls(Files(c.m, c.k)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s with %+v: %q, want %q", c.m.MediaKey, c.k, got, c.want)
		}
	}
}

func TestPhotosAreAskedForInTheirOriginalSizeFirst(t *testing.T) {
	f := Files(aVideo, Kinds{Photos: true})[0]
	if want := []string{"https://pbs.twimg.com/ext_tw_video_thumb/2/pu/img/Def?format=jpg&name=orig"}; !reflect.DeepEqual(f.Prefer, want) {
		t.Errorf("still: %q", f.Prefer)
	}
	for raw, want := range map[string][]string{
		"https://pbs.twimg.com/media/Abc.jpg":                {"https://pbs.twimg.com/media/Abc?format=jpg&name=orig"},
		"https://pbs.twimg.com/media/Abc.png":                {"https://pbs.twimg.com/media/Abc?format=png&name=orig"},
		"https://pbs.twimg.com/media/Abc?format=jpg&name=lg": nil, // already a formatted URL: as X gave it
		"https://video.twimg.com/tweet_video/Ghi.mp4":        nil,
		"http://127.0.0.1:8080/media/Abc.jpg":                nil,
	} {
		if got := original(raw); !reflect.DeepEqual(got, want) {
			t.Errorf("original(%s) = %q, want %q", raw, got, want)
		}
	}
}
