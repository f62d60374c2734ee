// Package account holds one X account's side of a sync: the API client with
// its own rate limits and meter, the account's keys in the state backend, and
// the report of its walks. A Session is the schema.ClientMeta the scheduler
// hands to every resolver; a Set is the top-level one that multiplexes into
// its sessions.
package account

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/rs/zerolog"
)

// Reported is the field of a log line that repeats a failure the sync's
// reports tell (Report, the compliance check's Failure): a destination that
// prints those (the exporter's summary) leaves such a line out.
const Reported = "reported"

// Sync identifies one run of the plugin's Sync, and which earlier syncs ran
// to their end, of those the state remembers (LoadEnded).
type Sync = outbox.Sync

// Session is one account during one sync.
type Session struct {
	UserID string // "" only when Err is set before it was known
	Index  int    // the account's place in the spec (accounts[Index])
	API    *client.Client
	Meter  *billing.Meter

	Fields client.Fields
	// AskedBy names the settings of the spec that put value in the request
	// parameter param (spec.AskedBy), for messages; nil names none.
	AskedBy      func(param, value string) []string
	Walk         walk.Settings // bookmark walks
	FolderBudget int           // requests all folder walks may spend together
	Clock        clock.Clock
	Logger       zerolog.Logger
	Sync         Sync
	State        state.Client
	Secrets      *secrets.Mask // masks the sync's credentials in text made from errors
	// Err is set when the account could not be prepared (bad token file,
	// unknown user): its resolvers fail with it, the others go on.
	Err error
	// Setup, when set, finishes preparing the account the first time one of
	// its resolvers runs (resolving the user id needs a request, which an
	// account in another shard should not make).
	Setup func(ctx context.Context) error
	// RowsKept says the destination keeps the rows in the plugin's process
	// (the exporter): the record then keeps no dates to send a row again.
	RowsKept bool
	// Resend says how long the rows of incremental tables are kept in the
	// state to send again (package outbox); the zero Policy (the exporter's,
	// which commits rows with the state) keeps none.
	Resend outbox.Policy
	Media  *Media // the spec's media_files; nil when off

	name      string
	setupOnce sync.Once
	report    Report
	recordMu  sync.Mutex
	record    *archived.Record // Record
}

// Media is a sync's media files, shared by its accounts: which files of the
// media objects are stored, and what stores them.
type Media struct {
	Kinds media.Kinds
	// MaxFileSize is the largest file stored (a file recorded too large
	// under a smaller limit is fetched again).
	MaxFileSize int64
	Saver       *media.Saver // nil when Err says why it could not be made
	Err         error
}

// ID names the session in logs and metrics. It is fixed when the session is
// created — the scheduler keys its metrics by it — and unique per account.
func (s *Session) ID() string {
	if s.name == "" {
		s.name = Label(s.Index)
		if s.UserID != "" {
			s.name = "user:" + s.UserID
		}
	}
	return s.name
}

// Label is the place of account i in the spec, accounts[i]: the name of
// its settings, and the account column of its usage rows.
func Label(i int) string { return fmt.Sprintf("accounts[%d]", i) }

// Name names account i for a person: its label, and its user when known
// ("accounts[0] (user 2244994945)").
func Name(i int, userID string) string {
	if userID == "" {
		return Label(i)
	}
	return Label(i) + " (user " + userID + ")"
}

// Name names the account for a person (see Name).
func (s *Session) Name() string { return Name(s.Index, s.UserID) }

// Report is what happened to the session's walks, for the usage table.
func (s *Session) Report() *Report { return &s.report }

// Ready finishes the account's setup the first time (Setup: it may ask the
// API whose token it is) and returns its error, if any, wrapped with the
// account's name. Every resolver calls it first.
func (s *Session) Ready(ctx context.Context) error {
	s.setupOnce.Do(func() {
		if s.Err == nil && s.Setup != nil {
			s.Err = s.Setup(ctx)
		}
	})
	if s.Err != nil {
		return fmt.Errorf("%s: %w", s.ID(), s.Err)
	}
	return nil
}

// LoadMemory reads a walk's memory; nil means nothing is held (first sync).
func (s *Session) LoadMemory(ctx context.Context, key string) (*walk.Memory, error) {
	value, err := GetKey(ctx, s.State, key)
	if err != nil {
		return nil, err
	}
	mem, err := walk.UnmarshalMemory(value)
	if err != nil {
		return nil, fmt.Errorf("state %q: %w", key, err)
	}
	return mem, nil
}

// SaveMemory stores a walk's memory. Only clean walks call it.
func (s *Session) SaveMemory(ctx context.Context, key string, mem *walk.Memory) error {
	value, err := mem.Marshal()
	if err != nil {
		return err
	}
	return SetKey(ctx, s.State, key, value)
}

// FlushWalk flushes the state a walk has set when rows are sent again
// (Resend): the rows it sent are in the state with it. Without an outbox
// the state must not reach the backend before the rows (the plugin flushes
// it once the tables are done).
func (s *Session) FlushWalk(ctx context.Context) error {
	if !s.Resend.On() {
		return nil
	}
	if err := s.State.Flush(ctx); err != nil {
		return fmt.Errorf("flushing state to the backend: %w", err)
	}
	return nil
}

// Set is the top-level client: all accounts, in spec order.
type Set struct {
	Sessions []*Session

	mu     sync.Mutex
	owners map[string]*Session // X user id → the account that syncs it
}

// Claim records that s syncs the X user userID. It fails when another
// account of the spec already does: the same user twice would have every
// post read, and billed, twice, and both walks would write the same state.
func (set *Set) Claim(s *Session, userID string) error {
	set.mu.Lock()
	defer set.mu.Unlock()
	if owner, ok := set.owners[userID]; ok && owner != s {
		return fmt.Errorf("accounts[%d] and accounts[%d] are the same X user (%s): list each user once", owner.Index, s.Index, userID)
	}
	if set.owners == nil {
		set.owners = map[string]*Session{}
	}
	set.owners[userID] = s
	return nil
}

// ID implements schema.ClientMeta.
func (*Set) ID() string { return "x" }

// Multiplex gives each account its own resolver run, in the spec's order.
// (`--shard N/T` is applied to the accounts before, by the plugin.)
func Multiplex(meta schema.ClientMeta) []schema.ClientMeta {
	set := meta.(*Set)
	out := make([]schema.ClientMeta, len(set.Sessions))
	for i, s := range set.Sessions {
		out[i] = s
	}
	return out
}

// WalkReport is one walk of one list.
type WalkReport struct {
	Operation client.Operation
	Table     string // x_bookmarks, x_bookmark_folders or x_bookmark_folder_posts
	List      string // "bookmarks" or the folder id
	Result    *walk.Result
	Err       error
	// Missing counts the expanded objects the walk's pages left out with no
	// error saying why (see resources).
	Missing int
}

// Report collects walk reports; safe for concurrent use.
type Report struct {
	mu      sync.Mutex
	walks   []WalkReport
	folders int
	media   *MediaReport
}

// MediaReport is what the account's media files pass did.
type MediaReport struct {
	// Files tried, of which Stored are in the store (Fetched of them
	// downloaded by this sync, Bytes in all) and Failed are not, for a
	// reason other than the byte budget.
	Files, Stored, Fetched, Failed int
	Bytes                          int64
	Requests, OK                   int    // requests to the media hosts, and those answered 200
	Err                            string // why the pass failed ("" when it did not)
}

// Add counts one file's outcome.
func (m *MediaReport) Add(o media.Outcome) {
	m.Files++
	m.Requests += o.Requests
	switch {
	case o.Status == media.Stored:
		m.Stored++
		if o.Fetched {
			m.Fetched++
			m.Bytes += o.File.Size
			m.OK++
		}
	case o.Status != media.OverBudget:
		m.Failed++
	}
}

// SetMedia records what the media files pass did.
func (r *Report) SetMedia(m MediaReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.media = &m
}

// Media is what the media files pass did; nil when it did not run.
func (r *Report) Media() *MediaReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.media
}

// AddWalk records a walk. The walk's memory is not kept: the state holds
// it, and a report lives as long as the sync, so every list's posts would
// stay in memory until the last account ends.
func (r *Report) AddWalk(w WalkReport) {
	if w.Result != nil && w.Result.Memory != nil {
		res := *w.Result
		res.Memory = nil
		w.Result = &res
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.walks = append(r.walks, w)
}

// Walks returns the recorded walks.
func (r *Report) Walks() []WalkReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.walks)
}

// Err joins the errors of every failed walk.
func (r *Report) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, w := range r.walks {
		errs = append(errs, w.Err) // Join drops the nils
	}
	return errors.Join(errs...)
}

// Tables sums up the walks by table, each list sorted: done are the tables a
// walk of which ended cleanly, failed those a walk of which failed. A table
// may be both (one folder walked, another not).
func (r *Report) Tables() (done, failed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.walks {
		if w.Err == nil {
			done = append(done, w.Table)
		} else {
			failed = append(failed, w.Table)
		}
	}
	slices.Sort(done)
	slices.Sort(failed)
	return slices.Compact(done), slices.Compact(failed)
}

// SetFolderCount records how many folders the account has, so the folder
// request budget can be shared among their walks.
func (s *Session) SetFolderCount(n int) {
	s.report.mu.Lock()
	s.report.folders = n
	s.report.mu.Unlock()
}

// FolderWalkBudget is one folder walk's share of the folder request budget,
// and never less than minFolderWalkBudget.
func (s *Session) FolderWalkBudget() int {
	s.report.mu.Lock()
	defer s.report.mu.Unlock()
	return max(minFolderWalkBudget, s.FolderBudget/max(1, s.report.folders))
}

// minFolderWalkBudget is the fewest requests a folder walk plans for: with
// fewer, an unchanged folder would bill a whole page (docs/walk.md#folders).
const minFolderWalkBudget = 3
