package store

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 serves an S3-compatible API in-process and returns the URL of a
// store in its bucket "media", under prefix.
func fakeS3(t *testing.T, prefix string) (storeURL string, backend *s3mem.Backend) {
	t.Helper()
	backend = s3mem.New()
	if err := backend.CreateBucket("media"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key-id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	q := url.Values{"endpoint": {srv.URL}, "region": {"us-east-1"}, "use_path_style": {"true"}, "disable_https": {"true"}}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return "s3://media?" + q.Encode(), backend
}

func TestAnS3StoreKeepsFilesByHash(t *testing.T) {
	u, backend := fakeS3(t, "archive/")
	ctx := context.Background()
	s, err := Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte("video "), 100_000)
	f := store(t, s, "https://video.twimg.com/v.mp4", data, "video/mp4")
	if f.Key != sum(data)[:2]+"/"+sum(data)+".mp4" || f.Size != int64(len(data)) {
		t.Fatalf("stored %+v", f)
	}
	obj, err := backend.GetObject("media", "archive/"+f.Key, nil)
	if err != nil {
		t.Fatalf("the bucket has no object archive/%s: %v", f.Key, err)
	}
	defer obj.Contents.Close()
	if obj.Size != int64(len(data)) || obj.Metadata["Content-Type"] != "video/mp4" {
		t.Fatalf("object of %d bytes, metadata %v", obj.Size, obj.Metadata)
	}
	again := store(t, s, "https://video.twimg.com/other.mp4", data, "video/mp4")
	if again.Key != f.Key {
		t.Fatalf("the same bytes stored as %s and %s", f.Key, again.Key)
	}
	got, err := s.Lookup(ctx, "https://video.twimg.com/v.mp4")
	if err != nil || got == nil || got.Key != f.Key {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	if err := s.Delete(ctx, f.Key); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Lookup(ctx, "https://video.twimg.com/v.mp4"); got != nil || err != nil {
		t.Fatalf("Lookup after Delete = %+v, %v", got, err)
	}
}
