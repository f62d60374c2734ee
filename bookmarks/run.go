package bookmarks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/google/uuid"
)

// Do runs the plans of the accounts that can take part, at once (each user
// has a window of its own), and returns how many did not finish.
func (op *Operation) Do(ctx context.Context) int {
	o, id := op.o, uuid.NewString()[:8]
	say := func(format string, a ...any) { fmt.Fprintf(o.Stderr, format+"\n", a...) }
	var wg sync.WaitGroup
	errs := make([]error, len(op.accounts))
	for i, a := range op.accounts {
		if a.problem != "" || (len(a.plan) == 0 && a.resumed == nil) {
			continue
		}
		j := a.resumed
		if j == nil {
			var err error
			j, err = CreateJournal(o.Out, OpPlan{ID: id, Kind: o.Kind, UserID: a.userID, Created: o.Clock.Now().UTC(),
				Command: o.Command, Posts: a.plan, SourceUserID: a.source}, o.Step)
			if err != nil {
				errs[i] = err
				continue
			}
		}
		wg.Go(func() {
			errs[i] = (&accountRun{o: o, a: a, j: j, say: say, sourceName: op.sourceName, recorded: len(j.Done)}).run(ctx)
		})
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			fmt.Fprintf(o.Stdout, "FAILED %s: %v\n", op.accounts[i].label, o.mask.Error(err))
		}
	}
	return failed
}

// commitEvery is how many changes are recorded in the archive at a time:
// one window's worth, so a long run's changes reach the archive as it goes.
const commitEvery = 50

// accountRun is one account's operation under way.
type accountRun struct {
	o          Options
	a          *opAccount
	j          *Journal
	say        func(string, ...any)
	sourceName string // the spec's, for _cq_source_name
	recorded   int    // of j.Done, recorded in the archive
	// billed counts the requests X answered in this run: each billed, as
	// max_billed_writes counts them.
	billed int
}

// run does the account's operation, from its journal.
func (r *accountRun) run(ctx context.Context) error {
	o, a := r.o, r.a
	defer r.j.log.Close()
	rest := r.j.Remaining()
	start := o.Clock.Now()
	for k, post := range rest {
		if err := ctx.Err(); err != nil {
			return r.stopped(fmt.Errorf("interrupted (%w)", context.Cause(ctx)))
		}
		if b := a.api.Budget(a.userID, o.Verb().Op); b.Limit > 0 && b.Remaining == 0 {
			// The window is used up: record what is done before waiting.
			if err := r.commit(ctx); err != nil {
				return err
			}
		}
		if o.maxWrites > 0 && r.billed >= o.maxWrites {
			return r.stopped(fmt.Errorf("stopped at max_billed_writes: X billed this run %s, USD %.3f (raise max_billed_writes, or set it to 0, to do more in one run)",
				plural.Count(r.billed, "request", "requests"), o.rates.WritesUSD(r.billed)))
		}
		confirmed, err := r.send(ctx, post)
		if err != nil {
			return err
		}
		if !confirmed {
			continue
		}
		if err := r.progressed(ctx, len(rest), k, start); err != nil {
			return err
		}
	}
	if err := r.commit(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	msg := fmt.Sprintf("%s: %s %d of %d, recorded in x_bookmark_changes", a.label, o.Verb().Done, len(r.j.Done), len(r.j.Plan.Posts))
	if len(r.j.Failed) > 0 {
		msg += fmt.Sprintf("; X refused %d (listed above)", len(r.j.Failed))
	}
	fmt.Fprintln(o.Stdout, msg)
	return nil
}

// commit records in the archive what the journal has and the archive does
// not, unless there is nothing new and the journal has work left.
func (r *accountRun) commit(ctx context.Context) error {
	idle := len(r.j.Done) == r.recorded && r.a.api.Meter().Usage(r.a.userID, r.o.Verb().Op).Requests == 0
	if idle && len(r.j.Remaining()) > 0 {
		return nil
	}
	if err := r.record(ctx); err != nil {
		return fmt.Errorf("recording the %s in %s: %w", r.o.Verb().Noun, r.o.Out, err)
	}
	r.recorded = len(r.j.Done)
	return nil
}

// send sends the request for post, journaled before and after, and
// reports whether X confirmed it; a post X refused is journaled and said.
func (r *accountRun) send(ctx context.Context, post string) (bool, error) {
	o, a, j := r.o, r.a, r.j
	if err := j.Sending(post); err != nil {
		return false, err
	}
	send := a.api.AddBookmark
	if o.Kind == OpRemove {
		send = a.api.RemoveBookmark
	}
	bookmarked, _, err := send(ctx, a.userID, post)
	o.Step("answer received") // and not yet in the journal: the kill tests stop here too
	if err != nil {
		if reason, perPost := refusedPost(err); perPost {
			reason = o.mask.String(reason)
			if err := j.Refused(post, reason); err != nil {
				return false, err
			}
			r.say("%s: X refused post %s: %s", a.label, post, reason)
			return false, nil
		}
		return false, r.stopped(o.explain(a, err))
	}
	r.billed++
	if want := o.Kind == OpAdd; bookmarked != want {
		if err := j.Refused(post, fmt.Sprintf("X answered bookmarked:%t", bookmarked)); err != nil {
			return false, err
		}
		r.say("%s: X answered bookmarked:%t for post %s", a.label, bookmarked, post)
		return false, nil
	}
	return true, j.Answered(post, bookmarked, o.Clock.Now())
}

// progressed records the changes every commitEvery posts X confirmed, and
// tells the user every 10 and at the last (k of rest).
func (r *accountRun) progressed(ctx context.Context, rest, k int, start time.Time) error {
	total := len(r.j.Plan.Posts)
	n := total - rest + k + 1
	if n%commitEvery == 0 {
		if err := r.commit(ctx); err != nil {
			return err
		}
	}
	if n%10 == 0 || k == rest-1 {
		left := ""
		if eta := (r.o.Clock.Now().Sub(start) / time.Duration(k+1) * time.Duration(rest-k-1)).Round(time.Minute); eta > 0 {
			left = fmt.Sprintf(" (about %s left)", hoursMinutes(eta))
		}
		r.say("%s: %s %d of %d%s", r.a.label, r.o.Verb().Done, n, total, left)
	}
	return nil
}

// stopped records what is done and returns err, saying how to go on.
func (r *accountRun) stopped(err error) error {
	if cerr := r.commit(context.Background()); cerr != nil {
		return errors.Join(err, cerr)
	}
	return fmt.Errorf("%w; %d of %d %s and recorded: run the same command again to resume", err, len(r.j.Done), len(r.j.Plan.Posts), r.o.Verb().Done)
}

// refusedPost tells an answer about the post itself (it does not exist,
// cannot be bookmarked), which the run records and goes past, from one
// that stops it (the token, the rate limit, the server, the network).
func refusedPost(err error) (string, bool) {
	if e, ok := errors.AsType[*client.ErrorsOnlyError](err); ok {
		return e.Error(), true
	}
	if e, ok := errors.AsType[*client.APIError](err); ok && (e.Status == 400 || e.Status == 404) {
		return e.Error(), true
	}
	return "", false
}

// explain adds what to do to an error that stopped an account.
func (o Options) explain(a *opAccount, err error) error {
	if e, ok := errors.AsType[*client.APIError](err); ok && e.Status == 403 && !errors.Is(err, client.ErrAppOnlyToken) && !errors.Is(err, client.ErrClientNotEnrolled) {
		return fmt.Errorf("%w: %s need the %s scope: run `%s`", err, o.Verb().Noun, auth.ScopeBookmarkWrite, a.login())
	}
	return err
}

// waitHook tells the user when a run waits for a rate-limit window.
func (o Options) waitHook(a *opAccount) func(string, client.Operation, time.Duration) {
	return func(_ string, op client.Operation, d time.Duration) {
		if op == o.Verb().Op {
			fmt.Fprintf(o.Stderr, "%s: waiting %s for the next rate-limit window (X allows %d %s per 15 minutes per user)\n",
				a.label, d.Round(time.Second), client.DefaultLimits()[op], o.Verb().Noun)
		}
	}
}
