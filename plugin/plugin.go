// Package plugin wires the X source into the CloudQuery SDK: the plugin
// value, its client (spec, accounts, state backend, scheduler) and the
// version stamped at build time.
package plugin

import (
	"context"
	"net/http"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/outbox"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
)

// Name, kind and team as the CloudQuery CLI and hub know them.
const (
	Name = "x"
	Kind = "source"
	Team = "cq-source-x"
)

// Version is set at build time with -ldflags "-X .../plugin.Version=v1.2.3"
// (the SDK's package command does); otherwise it is resolved from the build
// information Go records in the binary (see BuildInfo).
var Version = "development"

// UserAgent is the User-Agent of every request to the X API: the program
// and its version.
func UserAgent() string { return "cq-source-x/" + Version }

// Options change how the plugin reaches the world; tests and the sandbox
// use them, a CloudQuery sync uses the defaults.
type Options struct {
	// Clock for rate-limit waits and timestamps. Default: the wall clock.
	Clock clock.Clock
	// Transport for API and token requests. Default: http.DefaultTransport.
	Transport http.RoundTripper
	// State, when set, replaces the state backend of backend_options: the
	// standalone exporter keeps its state in its output directory.
	State state.Client
	// OnSessions, when set, is called with the accounts of each sync once
	// they are prepared, before any request; the exporter reads their meters
	// for progress and their reports for its summary.
	OnSessions func(*account.Set)
	// OnCompliance, when set, is called with the compliance check of each
	// sync that runs one (the spec has the section and the sync selects
	// x_post_compliance), before it starts; the exporter reads its requests
	// and its failure for its summary.
	OnCompliance func(*resources.Compliance)
	// RowsCommittedWithState: see WithRowsCommittedWithState.
	RowsCommittedWithState bool
	// RecordRows: see WithRecordRows.
	RecordRows int
	// Archived: see WithArchive.
	Archived func(ctx context.Context, userID string) ([]uint64, error)
	// ClientOptions are appended to the options of every API client of a
	// sync (the accounts', the compliance check's), after the plugin's own
	// (the exporter adds a wait hook, and the stop of its run).
	ClientOptions []client.Option
	// BuildTargets, when not nil, replace the SDK's default targets of the
	// package command.
	BuildTargets []plugin.BuildTarget
}

// Option sets an Option.
type Option func(*Options)

// WithClock sets the clock.
func WithClock(c clock.Clock) Option { return func(o *Options) { o.Clock = c } }

// WithTransport sets the HTTP transport.
func WithTransport(rt http.RoundTripper) Option { return func(o *Options) { o.Transport = rt } }

// WithState makes syncs use st instead of the backend of backend_options.
// The caller keeps ownership: syncs Flush it but never Close it.
func WithState(st state.Client) Option { return func(o *Options) { o.State = st } }

// WithArchive makes the destination's own record of the posts written to
// x_bookmarks the one the compliance checks read: archived returns them for
// a user (X ids as numbers, sorted), every row the sync sent before the call
// included. The plugin then keeps none in the state backend. The exporter
// keeps the ids it wrote, which are that record.
func WithArchive(archived func(ctx context.Context, userID string) ([]uint64, error)) Option {
	return func(o *Options) { o.Archived = archived }
}

// WithRowsCommittedWithState says that the destination commits the rows of
// a sync together with its state, as the exporter commits its files: the
// rows of incremental tables are then never sent again (spec.Resend), and
// the state is flushed only when the tables are done.
func WithRowsCommittedWithState() Option { return func(o *Options) { o.RowsCommittedWithState = true } }

// resendPolicy is how long the rows of s's syncs are sent again.
func (o Options) resendPolicy(s *spec.Spec) outbox.Policy {
	if o.RowsCommittedWithState {
		return outbox.Policy{}
	}
	return s.Resend.Policy()
}

// WithSessionsHook registers a function called with each sync's accounts.
func WithSessionsHook(f func(*account.Set)) Option { return func(o *Options) { o.OnSessions = f } }

// WithComplianceHook registers a function called with each sync's
// compliance check.
func WithComplianceHook(f func(*resources.Compliance)) Option {
	return func(o *Options) { o.OnCompliance = f }
}

// WithRecordRows makes the scheduler send records of up to n rows, rather
// than the SDK's default of 50: the standalone exporter writes records to
// Parquet, where each record written has a cost of its own.
func WithRecordRows(n int) Option { return func(o *Options) { o.RecordRows = n } }

// WithClientOptions adds options to every API client of a sync.
func WithClientOptions(opts ...client.Option) Option {
	return func(o *Options) { o.ClientOptions = append(o.ClientOptions, opts...) }
}

// WithBuildTargets sets the OS/architecture pairs the package command builds.
func WithBuildTargets(targets []plugin.BuildTarget) Option {
	return func(o *Options) { o.BuildTargets = targets }
}

// New returns the plugin.
func New(opts ...Option) *plugin.Plugin {
	o := Options{Clock: clock.Real{}, Transport: http.DefaultTransport}
	for _, opt := range opts {
		opt(&o)
	}
	sdkOpts := []plugin.Option{
		plugin.WithKind(Kind),
		plugin.WithTeam(Team),
		plugin.WithJSONSchema(spec.JSONSchema),
		plugin.WithConnectionTester(testConnection(o)),
	}
	if o.BuildTargets != nil {
		sdkOpts = append(sdkOpts, plugin.WithBuildTargets(o.BuildTargets))
	}
	return plugin.NewPlugin(Name, Version, newClientFunc(o), sdkOpts...)
}
