// Package plugin wires the X source into the CloudQuery SDK: the plugin
// value, its client (spec, accounts, state backend, scheduler) and the
// version stamped at build time.
package plugin

import (
	"net/http"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/spec"
)

// Name, kind and team as the CloudQuery CLI and hub know them.
const (
	Name = "x"
	Kind = "source"
	Team = "cq-source-x"
)

// Version is set at build time with -ldflags "-X .../plugin.Version=v1.2.3".
var Version = "development"

// Options change how the plugin reaches the world; tests and the sandbox
// use them, a CloudQuery sync uses the defaults.
type Options struct {
	// Clock for rate-limit waits and timestamps. Default: the wall clock.
	Clock clock.Clock
	// Transport for API and token requests. Default: http.DefaultTransport.
	Transport http.RoundTripper
}

// Option sets an Option.
type Option func(*Options)

// WithClock sets the clock.
func WithClock(c clock.Clock) Option { return func(o *Options) { o.Clock = c } }

// WithTransport sets the HTTP transport.
func WithTransport(rt http.RoundTripper) Option { return func(o *Options) { o.Transport = rt } }

// New returns the plugin.
func New(opts ...Option) *plugin.Plugin {
	o := Options{Clock: clock.Real{}, Transport: http.DefaultTransport}
	for _, opt := range opts {
		opt(&o)
	}
	return plugin.NewPlugin(Name, Version, newClientFunc(o),
		plugin.WithKind(Kind),
		plugin.WithTeam(Team),
		plugin.WithJSONSchema(spec.JSONSchema),
	)
}
