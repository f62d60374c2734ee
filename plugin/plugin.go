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
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/spec"
)

// Name, kind and team as the CloudQuery CLI and hub know them.
const (
	Name = "x"
	Kind = "source"
	Team = "cq-source-x"
)

// Version is set with -ldflags "-X .../plugin.Version=v1.2.3" (as the SDK's
// package command does), else resolved from the binary's build information.
var Version = "development"

// UserAgent is the User-Agent of every request to the X API.
func UserAgent() string { return "cq-source-x/" + Version }

// Options change how the plugin reaches the world (for the exporter, tests
// and the sandbox); a CloudQuery sync uses the defaults.
type Options struct {
	Clock         clock.Clock       // default: the wall clock
	Transport     http.RoundTripper // of API and token requests; default: http.DefaultTransport
	State         state.Client
	Observer      Observer
	MediaStore    *store.Store
	MediaStop     context.Context
	ClientOptions []client.Option
	BuildTargets  []plugin.BuildTarget // nil: the SDK's default targets
}

type Option func(*Options)

// WithClock sets the clock of rate-limit waits and timestamps.
func WithClock(c clock.Clock) Option { return func(o *Options) { o.Clock = c } }

func WithTransport(rt http.RoundTripper) Option { return func(o *Options) { o.Transport = rt } }

// WithState makes syncs use st instead of the backend of backend_options:
// the standalone exporter keeps its state in its output directory. The
// caller keeps ownership: syncs Flush it but never Close it.
func WithState(st state.Client) Option { return func(o *Options) { o.State = st } }

// WithMediaStore makes syncs store media files in st, which they never
// Close, instead of media_files.store; stop, when not nil, ends the fetches
// (not the sync) once it ends, as client.WithStop does the API's.
func WithMediaStore(st *store.Store, stop context.Context) Option {
	return func(o *Options) { o.MediaStore, o.MediaStop = st, stop }
}

// Observer hears from each sync: the exporter, and the benchmarks and
// tests, read its accounts' meters and reports.
type Observer interface {
	// SyncStarted is called with a sync's accounts and its compliance check
	// (nil when none) once they are prepared, before any request.
	SyncStarted(*account.Set, *compliance.Check)
}

type ObserverFunc func(*account.Set, *compliance.Check)

func (f ObserverFunc) SyncStarted(s *account.Set, c *compliance.Check) { f(s, c) }

// Destination is an Observer that is also the sync's destination, in the
// plugin's process (the exporter; docs/design/plugin.md#destination).
type Destination interface {
	Observer
	// Edit takes the edits of the rows of posts X reported, which the state
	// records as applied from the next flush on: the destination applies
	// them with the rows of the sync it commits, or after.
	Edit([]plan.Edit)
	// RecordRows is how many rows a record the scheduler sends holds at most
	// (0: the SDK's default, 50): a destination that writes Parquet pays for
	// each record it writes.
	RecordRows() int
}

// WithObserver makes o hear from every sync (and be its destination if a Destination).
func WithObserver(o Observer) Option { return func(o2 *Options) { o2.Observer = o } }

// destination is the Observer as a Destination, nil when it is none.
func (o Options) destination() Destination {
	d, _ := o.Observer.(Destination)
	return d
}

// resendPolicy is how long the rows of s's syncs are sent again.
func (o Options) resendPolicy(s *spec.Spec) outbox.Policy {
	if o.destination() != nil {
		return outbox.Policy{}
	}
	return s.Resend.Policy()
}

// WithClientOptions adds options to every API client of a sync, after the plugin's own.
func WithClientOptions(opts ...client.Option) Option {
	return func(o *Options) { o.ClientOptions = append(o.ClientOptions, opts...) }
}

// WithBuildTargets sets the OS/architecture pairs the package command builds.
func WithBuildTargets(targets []plugin.BuildTarget) Option {
	return func(o *Options) { o.BuildTargets = targets }
}

func New(opts ...Option) *plugin.Plugin {
	o := options(opts)
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

// options are the defaults with opts applied.
func options(opts []Option) Options {
	o := Options{Clock: clock.Real{}, Transport: http.DefaultTransport}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
