package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/spf13/cobra"
)

// statusOptions are the flags of `cq-source-x status`.
type statusOptions struct {
	spec            string
	tokenFiles      []string
	app             spec.Spec // the base URL and OAuth app of --token-file's accounts
	out             string
	noRefresh, json bool
}

// StatusReport is what status found (and prints with --json).
type StatusReport struct {
	Accounts []AccountStatus `json:"accounts"`
	// Out is the exporter's directory, if given, and Damaged its files
	// whose footer cannot be read.
	Out     string                `json:"out,omitempty"`
	Damaged []archive.DamagedFile `json:"damaged_files,omitempty"`
	// What status sent, as its API client metered it: GET /2/users/me, one
	// per account whose token could be tried, and retries; and refreshes.
	APIRequests    int `json:"api_requests"`
	PostsBilled    int `json:"posts_billed"`
	TokenRefreshes int `json:"token_refreshes"`

	meter *billing.Meter
	// credentials are masked in what status reports: a server may echo the
	// token it was sent in an error.
	credentials *secrets.Mask
	// archiveOnly: the accounts are the archive's, and nothing was sent.
	archiveOnly bool
	// What Out says of its accounts: its state and their last syncs.
	state *archive.StateInfo
	syncs map[string][][]usageRow
}

// AccountStatus is one account's status.
type AccountStatus struct {
	Account   string `json:"account"`
	TokenFile string `json:"token_file,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	Username  string `json:"username,omitempty"`
	Name      string `json:"name,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	// Scopes are absent for a raw access_token (X does not say).
	Scopes            []string   `json:"scopes,omitempty"`
	AccessTokenExpiry *time.Time `json:"access_token_expiry,omitempty"`
	// Refresh is "works", "failed", "not_tried" (--no-refresh) or
	// "impossible" (a raw access_token, or no refresh token).
	Refresh     string `json:"refresh,omitempty"`
	RefreshNote string `json:"refresh_note,omitempty"`
	// LastSync is the account's latest sync in x_api_usage, a row per
	// operation; HeldPosts the posts the bookmarks walk remembers and
	// ArchivedPosts those written to x_bookmarks.
	LastSync      []usageRow `json:"last_sync,omitempty"`
	HeldPosts     *int       `json:"held_posts,omitempty"`
	ArchivedPosts *int       `json:"archived_posts,omitempty"`
	Problems      []string   `json:"problems,omitempty"`
	Notes         []string   `json:"notes,omitempty"`
}

const statusLong = `Show, per account, who the token belongs to, its scopes and expiry, whether a
refresh works, and, with --out, the exporter's last sync of it (what it found
and cost) and the posts it holds. Give a spec file (--spec) or token files
(--token-file); or --out alone, for every account of the archive, from the
archive only: no token is read and no request sent.

What it costs: one GET /2/users/me per account (X bills it as a user read,
user_read_usd, once per UTC day) and, for each token file, one refresh at the
token endpoint. No post is read.
Refreshing is the only way to know that a refresh works: X rotates the
refresh token, and the new pair is saved atomically under the token file's
lock, as a sync saves it. --no-refresh tries nothing but the access token
(and nothing at all when it has expired).

A CloudQuery sync keeps its last sync in the destination's x_api_usage table
and the posts it holds in its state backend, neither of which status reads:
query x_api_usage for them. --out reads the exporter's directory.

` + exitCodesHelp + `
(an account "fails" when its token does not work, cannot be refreshed, or its
token file cannot be read)`

func (a *app) statusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status (--spec FILE | --token-file FILE...) [--out DIR] | status --out DIR",
		Short: "Show each account's token, user, last sync and held posts, reading no post",
		Long:  statusLong,
		Example: "  " + Name + " status --spec x.yml --out ./archive\n" +
			"  " + Name + " status --token-file alice.json --no-refresh\n" +
			"  " + Name + " status --out ./archive",
		GroupID: groupArchive,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv(&o.app.OAuth.ClientSecret, "X_CLIENT_SECRET")
			return a.status(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.spec, "spec", "", "CloudQuery spec file: its accounts, base_url and oauth")
	fs.StringSliceVar(&o.tokenFiles, "token-file", nil, "token file(s) written by login (comma-separated or repeated)")
	fs.StringVar(&o.out, "out", "", "an exporter's output directory: the last sync and the posts held")
	fs.StringVar(&o.app.BaseURL, "api-url", spec.DefaultBaseURL, "X API base URL, with --token-file")
	fs.StringVar(&o.app.OAuth.TokenURL, "token-url", auth.DefaultTokenURL, "token endpoint, with --token-file")
	fs.StringVar(&o.app.OAuth.ClientID, "client-id", "", "the app's Client ID, with --token-file (default: the one each file records)")
	fs.StringVar(&o.app.OAuth.ClientSecret, "client-secret", "", "client secret of a confidential app, with --token-file (env X_CLIENT_SECRET)")
	fs.BoolVar(&o.noRefresh, "no-refresh", false, "do not refresh the tokens (only try the access token)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	for _, f := range []string{"api-url", "token-url", "client-id", "client-secret", "token-file"} {
		cmd.MarkFlagsMutuallyExclusive("spec", f)
	}
	_ = cmd.MarkFlagFilename("spec", "yml", "yaml")
	_ = cmd.MarkFlagFilename("token-file", "json")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

func (a *app) status(ctx context.Context, o statusOptions) error {
	rep, err := status(ctx, o)
	if err != nil {
		return err
	}
	if !o.json {
		rep.WriteText(a.stdout, time.Now())
	} else if err := writeIndentedJSON(a.stdout, rep); err != nil {
		return err
	}
	failed := 0
	for _, s := range rep.Accounts {
		if len(s.Problems) > 0 {
			failed++
		}
	}
	damaged := ""
	if n := len(rep.Damaged); n > 0 {
		damaged = fmt.Sprintf("; %s damaged: run `%s`", plural.Count(n, "file of the archive is", "files of the archive are"), archive.RepairCommand(rep.Out))
	}
	if failed > 0 {
		where := "PROBLEM above"
		if o.json {
			where = `"problems" in the report`
		}
		return accountsError(failed, len(rep.Accounts), fmt.Errorf("status: %d of %s %s a problem (see %s)%s", failed, plural.Count(len(rep.Accounts), "account", "accounts"), plural.Pick(failed, "has", "have"), where, damaged))
	}
	if damaged != "" {
		return &exitError{code: ExitSomeAccountsFailed, err: errors.New("status: " + strings.TrimPrefix(damaged, "; "))}
	}
	return nil
}

// status looks at every account of o. Its error is about the command line
// or the files; an account's trouble is in its Problems.
func status(ctx context.Context, o statusOptions) (*StatusReport, error) {
	if o.spec == "" && len(o.tokenFiles) == 0 && o.out != "" {
		return archiveStatus(o.out)
	}
	s, err := statusSpec(o)
	if err != nil {
		return nil, err
	}
	rep := &StatusReport{Out: o.out, meter: billing.NewMeter(billing.DefaultRates()), credentials: xplugin.Credentials(s)}
	if o.out != "" {
		if err := rep.readArchive(); err != nil {
			return nil, err
		}
	}
	users := map[string]string{} // user id → the account that has it
	for i, acct := range s.Accounts {
		label := account.Label(i)
		if o.spec == "" {
			label = acct.TokenFile
		}
		st := rep.check(ctx, s, i, label, o.noRefresh)
		rep.credentials.Strings(st.Problems)
		st.RefreshNote = rep.credentials.String(st.RefreshNote)
		if first, ok := users[st.UserID]; ok {
			st.Problems = append(st.Problems, fmt.Sprintf("user %s is also %s: each user may appear once (a sync fails the repeat)", st.UserID, first))
		} else if st.UserID != "" {
			users[st.UserID] = st.Account
		}
		rep.fill(&st)
		rep.Accounts = append(rep.Accounts, st)
	}
	total := rep.meter.Total()
	rep.APIRequests, rep.PostsBilled = total.Requests, total.PostsReturned+total.PostsUnread
	return rep, nil
}

// archiveStatus is the status of every account of the archive in out, from
// its state and its x_api_usage files alone.
func archiveStatus(out string) (*StatusReport, error) {
	rep := &StatusReport{Out: out, archiveOnly: true}
	if err := rep.readArchive(); err != nil {
		return nil, err
	}
	users := map[string]bool{}
	for _, ids := range []iter.Seq[string]{maps.Keys(rep.state.Archived), maps.Keys(rep.state.HeldBookmarks), maps.Keys(rep.syncs)} {
		for uid := range ids {
			users[uid] = true
		}
	}
	delete(users, resources.ComplianceUsageUser) // the compliance check's rows of x_api_usage
	for _, uid := range slices.Sorted(maps.Keys(users)) {
		st := AccountStatus{Account: "user " + uid, UserID: uid}
		rep.fill(&st)
		rep.Accounts = append(rep.Accounts, st)
	}
	return rep, nil
}

// statusSpec is the spec whose accounts status looks at: --spec's, or the
// flags' app with an account per --token-file.
func statusSpec(o statusOptions) (*spec.Spec, error) {
	switch {
	case o.spec == "" && len(o.tokenFiles) == 0:
		return nil, usageError(errors.New("status: give --spec FILE, --token-file FILE or --out DIR"))
	case o.spec != "":
		src, err := cqspec.Read(o.spec)
		if err != nil {
			return nil, usageError(err)
		}
		return src.Plugin, nil
	}
	s := o.app
	for _, f := range o.tokenFiles {
		s.Accounts = append(s.Accounts, spec.Account{TokenFile: f})
	}
	return &s, nil
}

// check looks at account i of s: its token, the user behind it, a refresh.
func (rep *StatusReport) check(ctx context.Context, s *spec.Spec, i int, label string, noRefresh bool) AccountStatus {
	acct := s.Accounts[i]
	st := AccountStatus{Account: label, UserID: acct.UserID}
	if acct.AccessToken != "" {
		st.Refresh, st.RefreshNote = "impossible", "a raw access_token lasts two hours and cannot be refreshed: use token_file for scheduled syncs"
		_ = rep.whoAmI(ctx, &st, s.BaseURL, client.StaticTokenWithTransport(acct.AccessToken, nil))
		return st
	}
	st.TokenFile = acct.TokenFile
	file := auth.TokenFile{Path: acct.TokenFile}
	stored, err := file.Load()
	if err != nil {
		st.Refresh = "failed"
		st.Problems = append(st.Problems, err.Error())
		return st
	}
	rep.credentials.Add(stored.AccessToken, stored.RefreshToken)
	st.describeToken(stored)
	st.UserID = cmp.Or(st.UserID, stored.UserID)
	cfg := xplugin.AuthConfig(s, i, stored.ClientID)
	st.ClientID = cfg.ClientID
	if len(st.Scopes) > 0 && !slices.Contains(st.Scopes, auth.ScopeBookmarkWrite) {
		st.Notes = append(st.Notes, "no "+auth.ScopeBookmarkWrite+" scope: adding and removing bookmarks need `"+Name+" login --scopes "+auth.ScopeBookmarkWrite+"`")
	}
	live := stored.Expiry.IsZero() || time.Now().Before(stored.Expiry.Add(-10*time.Second))
	switch {
	case stored.RefreshToken == "":
		st.Refresh, st.RefreshNote = "impossible", "the file holds no refresh token (offline.access was not granted)"
		if !live {
			st.Problems = append(st.Problems, "the access token has expired and cannot be refreshed: run `"+Name+" login` again")
			return st
		}
	case noRefresh:
		st.Refresh, st.RefreshNote = "not_tried", "--no-refresh"
		if !live {
			st.RefreshNote += ", and the access token has expired: the user was not checked (a sync would refresh it)"
			return st
		}
	default:
		rep.checkRefresh(ctx, &st, s.BaseURL, cfg, file, stored)
		return st
	}
	_ = rep.whoAmI(ctx, &st, s.BaseURL, client.StaticTokenWithTransport(stored.AccessToken, nil))
	return st
}

// checkRefresh asks who the user is through the token file's token source,
// which refreshes an expired token; unless that refreshed it, it refreshes
// then. Either way the rotated pair is saved under the file's lock.
func (rep *StatusReport) checkRefresh(ctx context.Context, st *AccountStatus, baseURL string, cfg auth.Config, file auth.TokenFile, stored *auth.StoredToken) {
	src, err := auth.NewFileTokenSource(ctx, cfg, file, auth.WithSecrets(rep.credentials))
	if err != nil {
		st.Refresh = "failed"
		st.Problems = append(st.Problems, err.Error())
		return
	}
	err = rep.whoAmI(ctx, st, baseURL, &http.Client{Transport: auth.NewTransport(src, nil)})
	rep.TokenRefreshes++
	var te *auth.TokenEndpointError
	switch cur := src.Stored(); {
	case cur.RefreshToken != stored.RefreshToken:
		st.refreshed(cur, "refreshed when the expired access token was used")
		return
	case errors.As(err, &te):
		st.Refresh = "failed"
		return
	}
	cur, err := src.Refresh(ctx)
	if err != nil {
		st.Refresh = "failed"
		st.Problems = append(st.Problems, "refresh: "+err.Error())
		return
	}
	st.refreshed(cur, "refreshed now")
}

// whoAmI asks GET /2/users/me with hc who the token belongs to.
func (rep *StatusReport) whoAmI(ctx context.Context, st *AccountStatus, baseURL string, hc *http.Client) error {
	api, err := client.New(hc, client.WithBaseURL(baseURL), client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 2}),
		client.WithRateLimitWaitCap(0), client.WithMeter(rep.meter), client.WithSecrets(rep.credentials), client.WithUserAgent(xplugin.UserAgent()))
	if err != nil {
		st.Problems = append(st.Problems, err.Error())
		return err
	}
	me, _, err := api.Me(ctx)
	if err != nil {
		st.Problems = append(st.Problems, "GET /2/users/me: "+err.Error())
		return err
	}
	if st.UserID != "" && st.UserID != me.ID {
		st.Problems = append(st.Problems, fmt.Sprintf("the token belongs to user %s (@%s), not to user %s as the spec or the token file says", me.ID, me.Username, st.UserID))
	}
	st.UserID, st.Username, st.Name = me.ID, me.Username, me.Name
	return nil
}

func (st *AccountStatus) describeToken(t *auth.StoredToken) {
	st.Scopes = strings.Fields(t.Scope)
	if !t.Expiry.IsZero() {
		e := t.Expiry.UTC()
		st.AccessTokenExpiry = &e
	}
}

// refreshed records a refresh that worked: the pair now in the file.
func (st *AccountStatus) refreshed(t auth.StoredToken, how string) {
	st.Refresh, st.RefreshNote = "works", how+"; the new pair is saved in the token file"
	st.describeToken(&t)
}

// readArchive reads rep.Out's state, last syncs and damaged files.
func (rep *StatusReport) readArchive() (err error) {
	out := rep.Out
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		return usageErrorf("status: --out %s is not a directory an export wrote", out)
	}
	if rep.state, err = archive.ReadState(out); err != nil {
		return fmt.Errorf("status: reading the state of %s: %w", out, err)
	}
	if rep.syncs, err = syncs(out); err != nil {
		return fmt.Errorf("status: reading %s's x_api_usage files: %w", out, err)
	}
	rep.Damaged, err = archive.DamagedFiles(out)
	return err
}

// fill adds the archive's last sync and held posts of st's user.
func (rep *StatusReport) fill(st *AccountStatus) {
	if rep.state == nil || st.UserID == "" {
		return
	}
	if s := rep.syncs[st.UserID]; len(s) > 0 {
		st.LastSync = s[0]
	}
	if held, ok := rep.state.HeldBookmarks[st.UserID]; ok {
		st.HeldPosts = new(len(held))
	}
	if written, ok := rep.state.Archived[st.UserID]; ok {
		st.ArchivedPosts = new(len(written))
	}
}

// WriteText prints the report for a person.
func (rep *StatusReport) WriteText(w io.Writer, now time.Time) {
	for i, st := range rep.Accounts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		st.writeText(w, rep.Out, now, !rep.archiveOnly)
	}
	for _, d := range rep.Damaged {
		fmt.Fprintln(w, "\nDAMAGED "+d.Describe(rep.Out))
	}
	if rep.archiveOnly {
		fmt.Fprintf(w, "\nstatus read %s alone: no token, no request. Give --spec or --token-file for the tokens too.\n", rep.Out)
		return
	}
	fmt.Fprintf(w, "\nstatus sent %s to the API (GET /2/users/me: a user read each, no post), which returned %s, and %s.\n",
		plural.Count(rep.APIRequests, "request", "requests"), plural.Count(rep.PostsBilled, "post", "posts"), plural.Count(rep.TokenRefreshes, "token refresh", "token refreshes"))
	if rep.Out == "" {
		fmt.Fprint(w, "The last sync and the posts held are in an exporter's directory (--out DIR); a CloudQuery sync keeps them\n"+
			"in the destination's x_api_usage table and its state backend, e.g.:\n"+
			"  SELECT * FROM x_api_usage WHERE user_id = '...' ORDER BY sync_started_at DESC LIMIT 4\n")
	}
}

func (st *AccountStatus) writeText(w io.Writer, out string, now time.Time, token bool) {
	head := st.Account + ":"
	switch {
	case st.Username != "":
		head += fmt.Sprintf(" @%s (%s), user id %s", st.Username, st.Name, st.UserID)
	case st.UserID != "":
		head += " user id " + st.UserID
	}
	fmt.Fprintln(w, head)
	line := func(label, format string, a ...any) {
		fmt.Fprintf(w, "  %-14s %s\n", label+":", fmt.Sprintf(format, a...))
	}
	if token { // archive-only accounts have no token, problem nor note
		if st.TokenFile != "" {
			line("token file", "%s (client id %s)", st.TokenFile, cmp.Or(st.ClientID, "unknown"))
			if len(st.Scopes) > 0 {
				line("scopes", "%s", strings.Join(st.Scopes, " "))
			}
		} else {
			line("token", "a raw access_token from the spec; its scopes and expiry are unknown")
		}
		if e := st.AccessTokenExpiry; e != nil && now.Before(*e) {
			line("access token", "valid until %s (%s from now)", e.Format(timeLayout), e.Sub(now).Round(time.Minute))
		} else if e != nil {
			line("access token", "expired at %s", e.Format(timeLayout))
		}
		refresh := strings.ReplaceAll(st.Refresh, "_", " ")
		if st.RefreshNote != "" {
			refresh += ": " + st.RefreshNote
		}
		line("refresh", "%s", refresh)
	}
	if out != "" {
		st.writeArchive(line, out)
	}
	for _, p := range st.Problems {
		fmt.Fprintf(w, "  PROBLEM: %s\n", p)
	}
	for _, n := range st.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

const timeLayout = "2006-01-02 15:04:05 MST"

func (st *AccountStatus) writeArchive(line func(label, format string, a ...any), out string) {
	if len(st.LastSync) == 0 {
		line("last sync", "none in %s", out)
	} else {
		var billed, requests int64
		var usd float64
		var walks, failures []string
		found := map[string]int64{}
		for _, r := range st.LastSync {
			billed, requests, usd = billed+r.PostsBilled, requests+r.Requests, usd+r.EstimatedUSD
			found[r.Operation] += r.NewPosts
			if r.WalkOutcomes != "" {
				walks = append(walks, r.Operation+" "+r.WalkOutcomes)
			}
			if r.Failure != "" {
				failures = append(failures, r.Operation+": "+r.Failure)
			}
		}
		r0 := st.LastSync[0]
		line("last sync", "%s (sync %s): %s, %s; %s billed (est. USD %.4f), %s",
			r0.StartedAt.Format(timeLayout), r0.SyncID, plural.Count(found[string(client.OpListBookmarks)], "new bookmark", "new bookmarks"),
			plural.Count(found[string(client.OpGetFolder)], "new folder post", "new folder posts"), plural.Count(billed, "post", "posts"), usd, plural.Count(requests, "request", "requests"))
		if len(walks) > 0 {
			line("walks", "%s", strings.Join(walks, "; "))
		}
		for _, f := range failures {
			line("failed", "%s", f)
		}
	}
	held, archived := "no bookmarks walk yet", "none"
	if st.HeldPosts != nil {
		held = fmt.Sprintf("%d in the bookmarks walk's memory", *st.HeldPosts)
	}
	if st.ArchivedPosts != nil {
		archived = fmt.Sprint(*st.ArchivedPosts)
	}
	line("held posts", "%s; %s in x_bookmarks", held, archived)
}
