package export

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/walk"
)

// An export is interrupted by stopping its reads from X, never by
// cancelling the sync (docs/design/exporter.md).

// pageGrace is how long a page in flight at the interruption has to arrive:
// X bills it when it sends it, so it is kept if it comes within that time.
const pageGrace = 5 * time.Second

// stopRun sets the context that ends the run's reads (r.stop), and returns
// the function that ends it with a cause, and the one that stops watching
// ctx, whose end interrupts the run.
func (r *run) stopRun(ctx context.Context) (context.CancelCauseFunc, func() bool) {
	var interrupt context.CancelCauseFunc
	r.stop, interrupt = context.WithCancelCause(context.Background())
	unwatch := context.AfterFunc(ctx, func() {
		interrupt(walk.ErrInterrupted)
		if !r.o.Quiet {
			fmt.Fprintln(r.prog, "Interrupted: reading no more from X; committing what was read. Press Ctrl-C again to exit at once (nothing more is committed).")
		}
	})
	return interrupt, unwatch
}

// CutOff is a walk the interruption cut off: the next run reads its list
// again from the top, and X does not bill again the BilledPosts it read
// before the stop on the same UTC day.
type CutOff struct {
	List        string `json:"list"` // "bookmarks", "folder ID", or "folders" (the folder list)
	BilledPosts int    `json:"billed_posts"`
}

func cutOff(s *account.Session) []CutOff {
	if errors.Is(s.Err, walk.ErrInterrupted) {
		return []CutOff{{List: "every list"}}
	}
	var out []CutOff
	for _, w := range s.Report().Walks() {
		if w.Result == nil || w.Result.Outcome != walk.Interrupted {
			continue
		}
		list := w.List
		if w.Operation == client.OpGetFolder {
			list = "folder " + list
		}
		out = append(out, CutOff{List: list, BilledPosts: w.Result.Billed})
	}
	return out
}

// InterruptedLine says what an interrupted run kept and what the next run
// reads.
func (s *Summary) InterruptedLine() string {
	var again, unread []string
	for _, a := range s.Accounts {
		for _, c := range a.Interrupted {
			name := a.Account + " " + c.List
			if c.BilledPosts > 0 {
				again = append(again, fmt.Sprintf("%s (%s)", name, plural.Count(c.BilledPosts, "post", "posts")))
			} else {
				unread = append(unread, name)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "export interrupted; kept what was read: %s written (%s billed) and every walk that ended, committed.",
		plural.Count(s.Totals.BookmarksWritten, "bookmark", "bookmarks"), plural.Count(s.Totals.PostsBilled, "post", "posts"))
	if len(again) > 0 {
		fmt.Fprintf(&b, " The next run reads again from the top %s, skipping the posts kept (X bills a post once per UTC day: read again the same day, they are not billed again).", plural.Some(again, 4))
	}
	if len(unread) > 0 {
		fmt.Fprintf(&b, " It also reads what the stop left unread: %s.", plural.Some(unread, 4))
	}
	if len(again)+len(unread) == 0 {
		b.WriteString(" Every walk had ended: the next run goes on from here.")
	}
	if s.MediaFilesLeft > 0 {
		fmt.Fprintf(&b, " %s left to fetch, which the next run fetches.", plural.Count(s.MediaFilesLeft, "media file was", "media files were"))
	}
	return b.String()
}
