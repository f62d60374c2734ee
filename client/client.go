package client

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/internal/bearer"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/rs/zerolog"
)

// Defaults of the options.
const (
	DefaultBaseURL          = "https://api.x.com"
	DefaultUserAgent        = "cq-source-x (+https://github.com/cq-source-x/cq-source-x)"
	DefaultMaxResponseBytes = 16 << 20
	DefaultRateLimitWaitCap = DefaultWindow + time.Minute // the longest wait for a window: one window and a minute
	// DefaultResetMargin is added to every reset, for clock skew and the
	// reset's one-second resolution.
	DefaultResetMargin = time.Second
)

// Timeouts bound each attempt at a request, so that a server that never
// answers, or a byte at a time, cannot hold a sync (*TimeoutError, transient).
type Timeouts struct {
	Connect time.Duration // the dial and the TLS handshake
	Headers time.Duration // from the request sent to the status line and headers
	Request time.Duration // the whole attempt, the body read included
}

// Default timeouts: X answers a page in a second or two; a compliance upload is 2 MB.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultHeaderTimeout  = 30 * time.Second
	DefaultRequestTimeout = 2 * time.Minute
)

func DefaultTimeouts() Timeouts {
	return Timeouts{Connect: DefaultConnectTimeout, Headers: DefaultHeaderTimeout, Request: DefaultRequestTimeout}
}

// RetryPolicy says how long transient faults (a 5xx, a dropped connection, a
// 2xx body cut short or not JSON) are retried: a walk that gave up would be
// read, and billed, again. A fault that reached no server gets MaxAttempts
// only until the base URL has answered. Zero fields take the defaults.
type RetryPolicy struct {
	// Budget is how long one call may keep retrying, from its first attempt,
	// rate-limit waits left out. Negative: none, MaxAttempts alone bounds it.
	Budget      time.Duration
	MaxAttempts int // attempts a call gets even when its Budget is spent (1 = none past it)
	// Before retry n the client sleeps a uniformly random time in
	// [0, min(MaxDelay, BaseDelay×2^(n-1))], or what a Retry-After asks.
	BaseDelay time.Duration
	MaxDelay  time.Duration
}

const DefaultRetryBudget = 5 * time.Minute

// A call waits out maxRateLimitWaits 429s at most; after one without a reset
// header it waits rateLimitBaseDelay, doubled per 429 (with jitter) up to the wait cap.
const (
	maxRateLimitWaits  = 2
	rateLimitBaseDelay = 30 * time.Second
)

// withDefaults gives a field not positive its default (Budget: a zero one).
func (p RetryPolicy) withDefaults() RetryPolicy {
	p.Budget = cmp.Or(p.Budget, DefaultRetryBudget)
	p.MaxAttempts = cmp.Or(max(p.MaxAttempts, 0), 4)
	p.BaseDelay = cmp.Or(max(p.BaseDelay, 0), 500*time.Millisecond)
	p.MaxDelay = max(cmp.Or(max(p.MaxDelay, 0), 30*time.Second), p.BaseDelay)
	return p
}

// Client calls the X API v2. Create it with New.
type Client struct {
	http       *http.Client
	baseURL    string // no trailing slash
	clock      clock.Clock
	retry      RetryPolicy
	waitCap    time.Duration
	meter      *billing.Meter
	userAgent  string
	maxBody    int64
	log        zerolog.Logger
	waitHook   func(userID string, op Operation, d time.Duration)
	tokenCheck TokenCheck
	storage    *http.Client // compliance job upload and download URLs (WithStorageClient)
	timeouts   Timeouts
	redactor   *secrets.Mask
	stop       context.Context // WithStop
	stopGrace  time.Duration
	naming     *NamingPolicy // nil: the tweets naming

	rngMu sync.Mutex
	rng   *rand.Rand

	budgets *budgets

	answered atomic.Bool // the base URL's (attempts.answered)
}

type Option func(*Client) error

// WithBaseURL sets the API address: an absolute https URL without query,
// fragment, user info or white space; plain http for a loopback host only.
func WithBaseURL(base string) Option {
	return func(c *Client) (err error) {
		c.baseURL, err = checkBaseURL(base)
		return err
	}
}

// checkBaseURL returns base, checked as WithBaseURL says, without a trailing slash.
func checkBaseURL(base string) (string, error) {
	u, err := bearer.CheckURL(base)
	if err != nil {
		return "", fmt.Errorf("client: base URL %w", err)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// WithTimeouts sets the timeouts of each attempt; zero fields keep DefaultTimeouts'.
func WithTimeouts(t Timeouts) Option {
	d := DefaultTimeouts()
	return option(func(c *Client) {
		c.timeouts = Timeouts{Connect: cmp.Or(t.Connect, d.Connect), Headers: cmp.Or(t.Headers, d.Headers), Request: cmp.Or(t.Request, d.Request)}
	}, t.Connect < 0 || t.Headers < 0 || t.Request < 0, "client: negative timeout in %+v", t)
}

// option is the Option that sets with set, or, when its value is bad, the
// error format says.
func option(set func(c *Client), bad bool, format string, args ...any) Option {
	return func(c *Client) error {
		if bad {
			return fmt.Errorf(format, args...)
		}
		set(c)
		return nil
	}
}

// setting is an option that cannot fail.
func setting(set func(c *Client)) Option { return option(set, false, "") }

// WithNamingPolicy makes the client ask for bookmarks in the naming of p
// (default: the tweets naming). The clients of a sync share one policy.
func WithNamingPolicy(p *NamingPolicy) Option { return setting(func(c *Client) { c.naming = p }) }

// WithSecrets masks the credentials r holds in the lines the client logs.
func WithSecrets(r *secrets.Mask) Option { return setting(func(c *Client) { c.redactor = r }) }

// WithClock sets the clock used for all time and sleeping (default clock.Real{}).
func WithClock(clk clock.Clock) Option {
	return option(func(c *Client) { c.clock = clk }, clk == nil, "client: nil clock")
}

// WithRetryPolicy sets the retry policy; zero fields keep their defaults.
func WithRetryPolicy(p RetryPolicy) Option {
	return setting(func(c *Client) { c.retry = p.withDefaults() })
}

// WithRateLimitWaitCap sets the longest wait for a rate-limit window
// (default 16m); past it, a *RateLimitError. 0 never waits.
func WithRateLimitWaitCap(d time.Duration) Option {
	return option(func(c *Client) { c.waitCap = d }, d < 0, "client: negative rate-limit wait cap %s", d)
}

// WithLimits overrides per-user request limits per window; 0 turns the
// client's own budget off for the operation (429s are still handled).
func WithLimits(m map[Operation]int) Option {
	return func(c *Client) error {
		for op, n := range m {
			if n < 0 {
				return fmt.Errorf("client: negative limit %d for %s", n, op)
			}
			c.budgets.limits[op] = n
		}
		return nil
	}
}

// WithWindow sets the rate-limit window until the server's headers say one (default 15m).
func WithWindow(d time.Duration) Option {
	return option(func(c *Client) { c.budgets.window = d }, d <= 0, "client: window must be positive, not %s", d)
}

// WithMeter records usage in m (default: a meter of its own at X's rates).
func WithMeter(m *billing.Meter) Option {
	return option(func(c *Client) { c.meter = m }, m == nil, "client: nil meter")
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return option(func(c *Client) { c.userAgent = ua }, ua == "" || strings.ContainsAny(ua, "\r\n"), "client: user agent must be one non-empty line")
}

// WithLogger sets the logger for retries, waits and refusals (default: none).
func WithLogger(l zerolog.Logger) Option { return setting(func(c *Client) { c.log = l }) }

// WithWaitHook registers f, called as a rate-limit wait starts (for a
// countdown) on the goroutine that waits: it must not block.
func WithWaitHook(f func(userID string, op Operation, d time.Duration)) Option {
	return setting(func(c *Client) { c.waitHook = f })
}

// WithRandom seeds the backoff jitter, for reproducible tests.
func WithRandom(seed uint64) Option {
	return setting(func(c *Client) { c.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) })
}

// WithTokenCheck selects how pagination tokens are checked (default
// TokenBase32Hex, as the interface document specifies).
func WithTokenCheck(tc TokenCheck) Option {
	return option(func(c *Client) { c.tokenCheck = tc }, tc != TokenBase32Hex && tc != TokenOpaque, "client: unknown token check %d", tc)
}

// New returns a client that sends through a copy of httpClient, which adds
// the Authorization header, that does not follow redirects.
func New(httpClient *http.Client, opts ...Option) (*Client, error) {
	c := &Client{
		http:      noRedirects(cmp.Or(httpClient, http.DefaultClient)),
		baseURL:   DefaultBaseURL,
		clock:     clock.Real{},
		retry:     RetryPolicy{}.withDefaults(),
		waitCap:   DefaultRateLimitWaitCap,
		budgets:   &budgets{limits: DefaultLimits(), window: DefaultWindow, margin: DefaultResetMargin, m: map[budgetKey]*bucket{}},
		userAgent: DefaultUserAgent,
		maxBody:   DefaultMaxResponseBytes,
		log:       zerolog.Nop(),
		timeouts:  DefaultTimeouts(),
		meter:     billing.NewMeter(billing.DefaultRates()),
		rng:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		storage:   noRedirects(&http.Client{}),
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// noRedirects is a copy of hc that does not follow redirects, so that a
// redirect can never carry the token to another host.
func noRedirects(hc *http.Client) *http.Client {
	return &http.Client{Transport: hc.Transport, Jar: hc.Jar, Timeout: hc.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (c *Client) Meter() *billing.Meter { return c.meter }

// Budget returns the client's view of the (user, operation) window now.
func (c *Client) Budget(userID string, op Operation) Rate {
	return c.budgets.get(budgetKey{userID, op}, c.clock.Now())
}

func (c *Client) String() string { return "client.Client{" + c.baseURL + "}" }

// StaticToken returns an *http.Client that sends token as a bearer token
// and does not follow redirects; printing it does not show the token.
func StaticToken(token string) *http.Client { return StaticTokenWithTransport(token, nil) }

// StaticTokenWithTransport is StaticToken sending through base (nil = http.DefaultTransport).
func StaticTokenWithTransport(token string, base http.RoundTripper) *http.Client {
	return noRedirects(&http.Client{Transport: &bearer.Transport{Base: base, Token: func(context.Context) (string, error) { return token, nil }}})
}

// WithStop makes the client stop reading once stop ends: a call not yet
// sent returns at once, a wait ends, and a request in flight may finish
// within grace (X bills a page when it sends it). The error wraps
// context.Cause(stop). The exporter stops a sync so, since the SDK's
// scheduler drops the rows it holds when its own context ends.
func WithStop(stop context.Context, grace time.Duration) Option {
	return setting(func(c *Client) { c.stop, c.stopGrace = stop, grace })
}

// Sleep waits d on the client's clock, or until ctx ends or the client stops.
func (c *Client) Sleep(ctx context.Context, d time.Duration) error {
	ctx, done := c.stopping(ctx, 0)
	defer done()
	return c.clock.Sleep(ctx, d)
}

// stopping returns ctx, ended also grace after the client stops, and its release.
func (c *Client) stopping(ctx context.Context, grace time.Duration) (context.Context, func()) {
	if c.stop == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	end := func() {
		if grace <= 0 {
			cancel(context.Cause(c.stop))
			return
		}
		time.AfterFunc(grace, func() { cancel(context.Cause(c.stop)) })
	}
	if c.stop.Err() != nil {
		end()
		return ctx, func() { cancel(nil) }
	}
	unhook := context.AfterFunc(c.stop, end)
	return ctx, func() {
		unhook()
		cancel(nil)
	}
}
