package store

import (
	"context"
	"errors"
	"io"
	"os"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
	"gocloud.dev/gcerrors"
)

// bucket is a store in an object store: an object exists once its writer
// has closed, and a stop before leaves none.
type bucket struct {
	b *blob.Bucket
}

func (*bucket) spool() (*os.File, error) {
	return os.CreateTemp("", "cq-source-x-media-*"+spoolExt)
}

func (b *bucket) commit(ctx context.Context, f *os.File, key, contentType string, step func(string)) error {
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	if ok, err := b.exists(ctx, key); err != nil || ok {
		return err
	}
	// Cancelling the writer's context before Close abandons the upload.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.b.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType})
	if err != nil {
		return err
	}
	_, err = f.Seek(0, io.SeekStart) // the synced spool, from its start
	if err == nil {
		_, err = io.Copy(w, f)
	}
	if err != nil {
		cancel()
		w.Close()
		return err
	}
	step("uploaded")
	return w.Close()
}

func (b *bucket) exists(ctx context.Context, key string) (bool, error) {
	return b.b.Exists(ctx, key)
}

func (b *bucket) read(ctx context.Context, key string) ([]byte, error) {
	data, err := b.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, os.ErrNotExist
	}
	return data, err
}

func (b *bucket) write(ctx context.Context, key string, data []byte, _ func(string)) error {
	return b.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"})
}

func (b *bucket) delete(ctx context.Context, key string) error {
	err := b.b.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return errors.Join(os.ErrNotExist, err)
	}
	return err
}

func (b *bucket) hasUnder(ctx context.Context, prefix string) (bool, error) {
	_, err := b.b.List(&blob.ListOptions{Prefix: prefix + "/"}).Next(ctx)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return err == nil, err
}

func (b *bucket) close() error { return b.b.Close() }
