package client

import "time"

// Options only tests set: the release binary keeps the defaults.

// WithResetMargin sets the time added to a window's reset before sending again (default 1s).
func WithResetMargin(d time.Duration) Option {
	return option(func(c *Client) { c.budgets.margin = d }, d < 0, "client: negative reset margin %s", d)
}

// WithMaxResponseBytes caps the size of a response body (default 16 MiB).
func WithMaxResponseBytes(n int64) Option {
	return option(func(c *Client) { c.maxBody = n }, n <= 0, "client: max response bytes must be positive, not %d", n)
}
