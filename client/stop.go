package client

import (
	"context"
	"time"
)

// WithStop makes the client stop reading from the API once stop ends,
// whatever the context of each call: a call not yet sent returns at once
// and sends nothing, a request in flight is cancelled, and a wait (for a
// rate-limit window, or before a retry) ends. The error wraps
// context.Cause(stop), so the caller that stops the client says why.
//
// It is for a caller that must stop the reads without cancelling the
// context the calls run in: the CloudQuery SDK's scheduler drops the rows
// it holds when its context ends, so the exporter stops a sync by stopping
// its clients, and the resolvers end on their own, keeping what they read.
func WithStop(stop context.Context) Option {
	return func(c *Client) error {
		c.stop = stop
		return nil
	}
}

// Sleep waits d on the client's clock, or until ctx ends or the client is
// stopped (WithStop), and then returns the cause.
func (c *Client) Sleep(ctx context.Context, d time.Duration) error {
	ctx, done := c.stopping(ctx)
	defer done()
	return c.clock.Sleep(ctx, d)
}

// stopping returns ctx, ended also when the client is stopped, and the
// function that lets go of it.
func (c *Client) stopping(ctx context.Context) (context.Context, func()) {
	if c.stop == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if c.stop.Err() != nil {
		cancel(context.Cause(c.stop))
		return ctx, func() {}
	}
	unhook := context.AfterFunc(c.stop, func() { cancel(context.Cause(c.stop)) })
	return ctx, func() {
		unhook()
		cancel(nil)
	}
}
