package cli

import (
	"context"
	"fmt"
	"io"
	"net"

	view "github.com/cq-source-x/cq-source-x/browse"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/pkg/browser"
	"github.com/spf13/cobra"
)

const browseLong = `Serve a read-only page of an export's output directory on this computer:
the bookmarks newest bookmarked first, each with its author, dates, whole
text (long posts and articles too), the photos and video stills stored under
DIR/media, the post it quotes or answers, its folders and a link to it on X.
A post X reported withdrawn shows as such, with what the archive keeps of
it. Search by words of the text, the author's name or username and the
article's title, by the dates the posts were posted and for posts with
media; a search is a link (/?q=WORDS) that can be kept.

It serves on a loopback address only (127.0.0.1, a free port by default)
and answers no request for another host name; nothing leaves the computer
and nothing is written to DIR. It reads the files as they are committed,
while an export or a compaction runs beside it, and again when an export
has changed them. It prints the page's address; --open opens it in the
browser. Ctrl-C stops it. See docs/browse.md.`

func (a *app) browseCommand() *cobra.Command {
	var out, addr string
	var open bool
	cmd := &cobra.Command{
		Use:     "browse --out DIR [--addr 127.0.0.1:PORT] [--open]",
		Short:   "Look at the archive's bookmarks in a web browser: a local, read-only page with search",
		Long:    browseLong,
		Example: "  " + Name + " browse --out ./archive --open",
		GroupID: groupArchive,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runBrowse(cmd.Context(), out, addr, open)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "the export's output directory")
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "loopback address to listen on (port 0: a free one)")
	fs.BoolVar(&open, "open", false, "open the page in the browser")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

func (a *app) runBrowse(ctx context.Context, out, addr string, open bool) error {
	if err := checkLoopbackAddr("browse", addr, "the page shows the archive to whoever reaches it, so it serves only a loopback address"); err != nil {
		return err
	}
	srv, err := view.Open(out)
	if err != nil {
		return fmt.Errorf("browse: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("browse: %w", err)
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintln(a.stdout, url)
	fmt.Fprintf(a.stderr, "Serving %s of %s, read-only, at %s on this computer. Ctrl-C stops.\n", plural.Count(srv.Bookmarks(), "bookmark", "bookmarks"), out, url)
	if open {
		browser.Stdout, browser.Stderr = io.Discard, io.Discard
		if err := browser.OpenURL(url); err != nil {
			fmt.Fprintf(a.stderr, "Could not open a browser (%v): open %s in one.\n", err, url)
		}
	}
	return srv.Serve(ctx, ln)
}
