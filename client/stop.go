package client

import (
	"context"
	"time"
)

// WithStop makes the client stop reading from the API once stop ends,
// whatever the context of each call: a call not yet sent returns at once
// and sends nothing, and a wait (for a rate-limit window, or before a
// retry) ends. A request in flight may finish within grace — X bills a page
// when it sends it, so the page is received and kept — and is cancelled
// after. The error wraps context.Cause(stop), so the caller that stops the
// client says why.
//
// It is for a caller that must stop the reads without cancelling the
// context the calls run in: the CloudQuery SDK's scheduler drops the rows
// it holds when its context ends, so the exporter stops a sync by stopping
// its clients, and the resolvers end on their own, keeping what they read.
func WithStop(stop context.Context, grace time.Duration) Option {
	return func(c *Client) error {
		c.stop, c.stopGrace = stop, grace
		return nil
	}
}

// Sleep waits d on the client's clock, or until ctx ends or the client is
// stopped (WithStop), and then returns the cause.
func (c *Client) Sleep(ctx context.Context, d time.Duration) error {
	ctx, done := c.stopping(ctx, 0)
	defer done()
	return c.clock.Sleep(ctx, d)
}

// stopping returns ctx, ended also after the client is stopped (at once,
// or after grace), and the function that lets go of it.
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
