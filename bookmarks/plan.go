// Package bookmarks is what `cq-source-x bookmarks remove` and `add` do to
// an account's bookmarks on X from an exporter's archive: which posts they
// may change, each account's plan and its cost, the run within X's rate
// limits and max_billed_writes, its journal, and what it did, recorded in
// the archive (x_bookmark_changes, x_api_usage, the walk memory).
package bookmarks

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/rs/zerolog"
)

// Options are the settings of `bookmarks remove` and `bookmarks add`.
type Options struct {
	Kind      string // OpRemove or OpAdd
	Spec, Out string
	Users     []string // only the accounts of these user ids
	// remove's selection: a post must match each one given.
	ArchivedBefore time.Time
	Folder         string
	// IDsFile lists posts, one a line ("-": Stdin): remove's selection, or
	// what add saves. From and FromUser are the archive, and its account,
	// add saves from.
	IDsFile        string
	From, FromUser string
	Yes            bool   // do it; otherwise a dry run
	Command        string // what x_bookmark_changes records of the command

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Clock and Transport reach X (tests; nil: the real ones); Step marks
	// the crash-safety steps (the kill tests).
	Clock     clock.Clock
	Transport http.RoundTripper
	Step      func(string)

	// mask hides the spec's credentials in what a server answered (it may
	// echo a token) before it is printed or journaled.
	mask      *secrets.Mask
	rates     billing.Rates // the spec's, with its bookmark_write_usd
	maxWrites int           // max_billed_writes
}

// UsageError is a mistake in what the command was asked (its selection,
// the spec, the archive it names): nothing was done.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// opAccount is one account of a bookmark operation.
type opAccount struct {
	index     int    // i of accounts[i]
	label     string // accounts[i] (user ID)
	userID    string
	tokenFile string
	scopes    []string // as the token file records them; nil when unknown
	api       *client.Client
	problem   string // why the account cannot take part

	plan     []string // posts to change, in order
	resumed  *Journal
	skipped  []string // what was left out, and why
	examples []string // posts left out for what their rows lack
	archived int      // add: the posts planned the account's archive holds
	source   string   // add: the account the posts come from
}

// Verb names an operation: what it does, what it did, its requests, and
// the API operation each is.
type Verb struct {
	Doing, Done, Noun string
	Op                client.Operation
}

func (o Options) Verb() Verb {
	if o.Kind == OpRemove {
		return Verb{"remove", "removed", "removals", client.OpRemoveBookmark}
	}
	return Verb{"add", "added", "additions", client.OpAddBookmark}
}

// Operation is one run of `bookmarks remove` or `bookmarks add`: its
// accounts, each with its plan.
type Operation struct {
	o          Options
	sourceName string
	accounts   []*opAccount
}

// Prepare reads the spec, the archive and the accounts' token files, and
// plans each account's part; it sends no request but GET /2/users/me for
// an account whose user id neither the spec nor its token file says.
func Prepare(ctx context.Context, o Options) (*Operation, error) {
	o.Clock = cmp.Or[clock.Clock](o.Clock, clock.Real{})
	o.Transport = cmp.Or(o.Transport, http.DefaultTransport)
	if o.Step == nil {
		o.Step = func(string) {}
	}
	// Accounts run at once: one writer at a time.
	var mu sync.Mutex
	o.Stdout, o.Stderr = &syncWriter{mu: &mu, w: o.Stdout}, &syncWriter{mu: &mu, w: o.Stderr}
	src, err := cqspec.Read(o.Spec)
	if err != nil {
		return nil, &UsageError{err}
	}
	o.mask = xplugin.Credentials(src.Plugin)
	o.rates, o.maxWrites = src.Plugin.Rates(), *src.Plugin.MaxBilledWrites
	info, err := archive.ReadState(o.Out)
	if err != nil {
		return nil, fmt.Errorf("bookmarks %s: reading the archive %s: %w", o.Kind, o.Out, err)
	}
	if info.LastRun == "" {
		return nil, usageErrorf("bookmarks %s: %s holds no export: run `cq-source-x export --spec %s --out %s` first", o.Kind, o.Out, o.Spec, o.Out)
	}
	accounts, err := o.accounts(ctx, src)
	if err != nil {
		return nil, err
	}
	if err := o.plan(accounts, info, NewCompleteness(src.Plugin.RequestFields())); err != nil {
		return nil, err
	}
	return &Operation{o: o, sourceName: src.Name, accounts: accounts}, nil
}

// Accounts and Problems count the operation's accounts, and those that
// cannot take part.
func (op *Operation) Accounts() int { return len(op.accounts) }

func (op *Operation) Problems() int {
	n := 0
	for _, a := range op.accounts {
		if a.problem != "" {
			n++
		}
	}
	return n
}

// CheckScopes refuses a token without the bookmark.write scope, before
// anything is sent.
func (op *Operation) CheckScopes() error {
	for _, a := range op.accounts {
		if a.problem == "" && a.lacksScope() {
			return usageErrorf("bookmarks %s: %s: the token has no %s scope (it has: %s), which %s need: run `%s`; nothing was done",
				op.o.Kind, a.label, auth.ScopeBookmarkWrite, strings.Join(a.scopes, " "), op.o.Verb().Noun, a.login())
		}
	}
	return nil
}

// accounts are the spec's accounts (those of o.Users).
func (o Options) accounts(ctx context.Context, src *cqspec.Source) ([]*opAccount, error) {
	meter := billing.NewMeter(src.Plugin.Rates())
	var out []*opAccount
	for i, acct := range src.Plugin.Accounts {
		a := &opAccount{index: i, label: account.Label(i), userID: acct.UserID, tokenFile: acct.TokenFile}
		if err := o.connect(ctx, src.Plugin, meter, a); err != nil {
			a.problem = o.mask.String(err.Error())
		}
		out = append(out, a)
	}
	if len(o.Users) > 0 {
		var kept []*opAccount
		for _, u := range o.Users {
			i := slices.IndexFunc(out, func(a *opAccount) bool { return a.userID == u })
			if i < 0 {
				return nil, usageErrorf("bookmarks %s: --user %s: no account of the spec is user %s", o.Kind, u, u)
			}
			kept = append(kept, out[i])
		}
		out = kept
	}
	if o.Kind == OpAdd && len(out) != 1 {
		return nil, usageErrorf("bookmarks add: the spec has %d accounts: name the one to add to with --user ID", len(out))
	}
	return out, nil
}

// connect gives the account its API client, its token's scopes and its
// user id.
func (o Options) connect(ctx context.Context, s *spec.Spec, meter *billing.Meter, a *opAccount) error {
	api, fileUser, err := xplugin.AccountClient(ctx, s, a.index, meter, zerolog.Nop(), o.mask,
		xplugin.WithClock(o.Clock), xplugin.WithTransport(o.Transport),
		xplugin.WithClientOptions(client.WithWaitHook(o.waitHook(a))))
	if err != nil {
		return err
	}
	a.api, a.userID = api, cmp.Or(a.userID, fileUser)
	if a.tokenFile != "" {
		if stored, err := (auth.TokenFile{Path: a.tokenFile}).Load(); err == nil {
			a.scopes = strings.Fields(stored.Scope)
		}
	}
	if a.userID == "" {
		if a.userID, err = xplugin.UserID(ctx, api, a.index); err != nil {
			return err
		}
	}
	a.label = account.Name(a.index, a.userID)
	return nil
}

func (a *opAccount) lacksScope() bool {
	return len(a.scopes) > 0 && !slices.Contains(a.scopes, auth.ScopeBookmarkWrite)
}

// login is the command that gives the account's token the scope it lacks.
func (a *opAccount) login() string {
	cmd := "cq-source-x login --scopes " + auth.ScopeBookmarkWrite
	if a.tokenFile != "" {
		cmd += " --token-file " + a.tokenFile
	}
	return cmd
}

// plan fills each account's plan, or finds its pending operation.
func (o Options) plan(accounts []*opAccount, info *archive.StateInfo, complete Completeness) error {
	var listed []string
	var err error
	if o.IDsFile != "" {
		if listed, err = readIDs(o.IDsFile, o.Stdin); err != nil {
			return usageErrorf("bookmarks %s: --ids: %w", o.Kind, err)
		}
	}
	changes, err := ReadChanges(o.Out)
	if err != nil {
		return err
	}
	var from []ArchivedPost
	var fromUser string
	if o.From != "" {
		if from, fromUser, err = o.sourcePosts(); err != nil {
			return err
		}
	}
	for _, a := range accounts {
		if a.problem != "" {
			continue
		}
		if a.resumed, err = OpenJournal(o.Out, o.Kind, a.userID, o.Step); err != nil {
			return err
		}
		if a.resumed != nil {
			continue
		}
		held, ok := info.HeldBookmarks[a.userID]
		if !ok {
			a.problem = fmt.Sprintf("the archive has no bookmarks walk of user %s: run `cq-source-x export` first", a.userID)
			continue
		}
		position := map[string]int{} // in the list, as the last export saw it
		for i, id := range held {
			position[id] = i
		}
		if o.Kind == OpRemove {
			err = o.planRemoval(a, position, listed, info, changes, complete)
		} else {
			err = o.planAddition(a, position, listed, from, fromUser)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// planRemoval plans the removal of the selected archived bookmarks, oldest
// first, and counts the others by why they are skipped.
func (o Options) planRemoval(a *opAccount, position map[string]int, listed []string, info *archive.StateInfo, changes *Changes, complete Completeness) error {
	selected, ok := o.removalSelection(a, listed, info)
	if !ok {
		return nil
	}
	rows, err := ReadBookmarks(o.Out, complete, func(uid, pid string) bool {
		return uid == a.userID && (selected == nil || selected[pid])
	})
	if err != nil {
		return err
	}
	byPost := map[string]ArchivedPost{}
	candidates := slices.Collect(maps.Keys(selected)) // or, with no selection, every archived post
	for _, r := range rows {
		byPost[r.PostID] = r
		if selected == nil {
			candidates = append(candidates, r.PostID)
		}
	}
	counts := map[string]int{}
	for _, id := range candidates {
		r, archived := byPost[id]
		_, inList := position[id]
		switch {
		case !archived:
			counts["not in the archive"]++
		case !o.ArchivedBefore.IsZero() && !r.FirstSeenAt.Before(o.ArchivedBefore):
			// not selected
		case changes.Latest[a.userID][id] == ChangeRemoved:
			counts["removed already by cq-source-x bookmarks remove"]++
		case !inList:
			counts["no longer in the list, as the last export saw it"]++
		case r.Missing != "":
			counts["in the archive without all their fields"]++
			if len(a.examples) < 3 {
				a.examples = append(a.examples, id+": "+r.Missing)
			}
		default:
			a.plan = append(a.plan, id)
		}
	}
	slices.SortFunc(a.plan, func(x, y string) int { return cmp.Compare(position[y], position[x]) })
	for _, why := range slices.Sorted(maps.Keys(counts)) {
		a.skipped = append(a.skipped, fmt.Sprintf("%d %s", counts[why], why))
	}
	return nil
}

// removalSelection is the posts --ids and --folder select (nil: every
// archived post). A folder the archive does not hold is the account's
// problem (ok is then false).
func (o Options) removalSelection(a *opAccount, listed []string, info *archive.StateInfo) (selected map[string]bool, ok bool) {
	restrict := func(ids []string) {
		next := map[string]bool{}
		for _, id := range ids {
			if selected == nil || selected[id] {
				next[id] = true
			}
		}
		selected = next
	}
	if o.IDsFile != "" {
		restrict(listed)
	}
	if o.Folder != "" {
		posts, found := info.HeldFolders[a.userID][o.Folder]
		if !found {
			folders := strings.Join(slices.Sorted(maps.Keys(info.HeldFolders[a.userID])), ", ")
			a.problem = fmt.Sprintf("the archive has no folder %s of user %s (its folders: %s)", o.Folder, a.userID, cmp.Or(folders, "none"))
			return nil, false
		}
		restrict(posts)
	}
	return selected, true
}

// sourcePosts are the posts of --from, oldest first, and their account.
func (o Options) sourcePosts() ([]ArchivedPost, string, error) {
	rows, err := ReadBookmarks(o.From, Completeness{}, func(uid, _ string) bool { return o.FromUser == "" || uid == o.FromUser })
	if err != nil {
		return nil, "", fmt.Errorf("bookmarks add: reading --from %s: %w", o.From, err)
	}
	users := map[string]bool{}
	for _, r := range rows {
		users[r.UserID] = true
	}
	switch {
	case len(users) == 0 && o.FromUser != "":
		return nil, "", usageErrorf("bookmarks add: --from %s holds no bookmark of user %s", o.From, o.FromUser)
	case len(users) == 0:
		return nil, "", usageErrorf("bookmarks add: --from %s holds no bookmark", o.From)
	case len(users) > 1:
		return nil, "", usageErrorf("bookmarks add: --from %s holds the bookmarks of users %s: pick one with --from-user ID", o.From, strings.Join(slices.Sorted(maps.Keys(users)), ", "))
	}
	slices.SortStableFunc(rows, func(a, b ArchivedPost) int {
		return cmp.Or(a.FirstSeenAt.Compare(b.FirstSeenAt), cmp.Compare(b.FoundPosition, a.FoundPosition))
	})
	return rows, rows[0].UserID, nil
}

// planAddition lists the posts to add to the account, oldest first.
func (o Options) planAddition(a *opAccount, position map[string]int, listed []string, from []ArchivedPost, fromUser string) error {
	var posts []string
	if o.From != "" {
		if fromUser == a.userID && filepath.Clean(o.From) == filepath.Clean(o.Out) {
			return usageErrorf("bookmarks add: --from %s is the account's own archive", o.From)
		}
		for _, r := range from {
			posts = append(posts, r.PostID)
		}
		a.source = fromUser
	} else {
		posts = slices.Clone(listed)
		slices.Reverse(posts)
	}
	seen, planned := map[string]bool{}, map[string]bool{}
	alreadyHeld := 0
	for _, id := range posts {
		_, inList := position[id]
		switch {
		case seen[id]:
		case inList:
			alreadyHeld++
		default:
			a.plan = append(a.plan, id)
			planned[id] = true
		}
		seen[id] = true
	}
	if alreadyHeld > 0 {
		a.skipped = append(a.skipped, fmt.Sprintf("%d bookmarked already, as the last export saw the list", alreadyHeld))
	}
	rows, err := ReadBookmarks(o.Out, Completeness{}, func(uid, pid string) bool { return uid == a.userID && planned[pid] })
	a.archived = len(rows)
	return err
}

// readIDs reads post ids, one a line; blank lines and # comments are
// skipped.
func readIDs(path string, stdin io.Reader) ([]string, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var ids []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.Trim(line, "0123456789") != "" || len(line) > 19 {
			return nil, fmt.Errorf("%s, line %d: %q is not a post id", path, n, line)
		}
		ids = append(ids, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New(path + " lists no post id")
	}
	return ids, nil
}

// WritePlan prints, for each account, what the operation will do or why it
// cannot, and what the requests it sends cost.
func (op *Operation) WritePlan() {
	o := op.o
	var sent []int // the requests of each account
	archived := 0  // add: the posts planned the archive holds
	for _, a := range op.accounts {
		archived += a.archived
		n := len(a.plan)
		switch {
		case a.problem != "":
			fmt.Fprintf(o.Stdout, "%s:\n  PROBLEM: %s\n", a.label, a.problem)
			n = 0
		case a.resumed != nil:
			n = o.writeResumedPlan(a)
		default:
			o.writeNewPlan(a)
		}
		if a.problem == "" && a.lacksScope() {
			fmt.Fprintf(o.Stdout, "  PROBLEM: the token has no %s scope: run `%s` first\n", auth.ScopeBookmarkWrite, a.login())
		}
		sent = append(sent, n)
	}
	if slices.Max(append(sent, 0)) > 0 {
		o.writeCost(sent, archived)
	}
}

// writeResumedPlan prints how far the account's pending run got, and
// returns how many posts it has left.
func (o Options) writeResumedPlan(a *opAccount) int {
	j := a.resumed
	n := len(j.Remaining())
	fmt.Fprintf(o.Stdout, "%s: resuming the run %s of %s (%s): %d of %d done, %d to %s\n", a.label, j.Plan.ID,
		j.Plan.Created.Local().Format("2006-01-02 15:04"), j.Plan.Command, len(j.Done)+len(j.Failed), len(j.Plan.Posts), n, o.Verb().Doing)
	if j.Sent != "" {
		fmt.Fprintf(o.Stdout, "  post %s was sent when that run stopped, and X's answer is unknown: it is sent again, which is safe (X answers with the state the request leaves)\n", j.Sent)
	}
	if !o.ArchivedBefore.IsZero() || o.Folder != "" || o.IDsFile != "" || o.From != "" {
		fmt.Fprintln(o.Stdout, "  (this command's selection is not used: the pending run is finished first)")
	}
	return n
}

// writeNewPlan prints the account's plan and what it skipped.
func (o Options) writeNewPlan(a *opAccount) {
	doing, n := o.Verb().Doing, len(a.plan)
	what := fmt.Sprintf("%s to %s, oldest first", plural.Count(n, "bookmark", "bookmarks"), doing)
	if o.Kind == OpAdd {
		what = plural.Count(n, "post", "posts") + " to add, oldest first"
		if a.source != "" {
			what += ", from the archive of user " + a.source
		}
	}
	if n == 0 {
		what = "nothing to " + doing
	}
	fmt.Fprintf(o.Stdout, "%s: %s\n", a.label, what)
	for _, s := range a.skipped {
		fmt.Fprintf(o.Stdout, "  skipped: %s\n", s)
	}
	for _, s := range a.examples {
		fmt.Fprintf(o.Stdout, "    e.g. %s\n", s)
	}
}

// writeCost prints what the requests each account sends cost, how long
// the longest account takes, and, for additions, what the next export bills.
func (o Options) writeCost(sent []int, archived int) {
	total, capped, longest := 0, 0, 0
	for _, n := range sent {
		total += n
		if o.maxWrites > 0 {
			n = min(n, o.maxWrites)
		}
		capped += n
		longest = max(longest, n)
	}
	limit := client.DefaultLimits()[o.Verb().Op]
	fmt.Fprintf(o.Stdout, "\nCost: %s, USD %.3f (X bills each write request; bookmark_write_usd: %v), and no post read. X allows %d %s per 15 minutes per user: %s.\n",
		plural.Count(total, "request", "requests"), o.rates.WritesUSD(total), o.rates.Write, limit, o.Verb().Noun, duration(longest, limit))
	if capped < total {
		fmt.Fprintf(o.Stdout, "max_billed_writes (%d) stops each account's run at %s: this run sends %s, USD %.3f; run the same command again to go on.\n",
			o.maxWrites, plural.Count(o.maxWrites, "request", "requests"), plural.Count(capped, "request", "requests"), o.rates.WritesUSD(capped))
	}
	if o.Kind == OpRemove {
		fmt.Fprintln(o.Stdout, "The archive keeps every row; each removal is recorded in x_bookmark_changes, and the walk memory forgets the posts removed, so the next export bills what it would have without them.")
		return
	}
	read := total + 2*len(sent)
	fmt.Fprintf(o.Stdout, "The next export reads each added post as a new bookmark: about %d posts billed (USD %.2f).", read, float64(read)*o.rates.Post)
	if archived > 0 {
		fmt.Fprintf(o.Stdout, " %d of them %s in x_bookmarks already, and %s not written again.", archived, plural.Pick(archived, "is", "are"), plural.Pick(archived, "is", "are"))
	}
	fmt.Fprintln(o.Stdout, " Each addition is recorded in x_bookmark_changes.")
}

// duration says how long n requests take at limit per window.
func duration(n, limit int) string {
	if n <= limit {
		return fmt.Sprintf("%s in one window", plural.Count(n, "request fits", "requests fit"))
	}
	windows := (n + limit - 1) / limit
	d := time.Duration(windows-1) * client.DefaultWindow
	return fmt.Sprintf("%d requests take about %s (%d windows of 15 minutes; accounts run side by side)", n, hoursMinutes(d), windows)
}

// hoursMinutes is d as 4h45m, 5h or 30m.
func hoursMinutes(d time.Duration) string {
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}

// syncWriter is a writer several goroutines share.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
