package client

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"
	"sync"
	"time"
)

// Phases of an attempt that a timeout bounds (TimeoutError.Phase).
const (
	PhaseConnect = "connect"
	PhaseHeaders = "headers"
	PhaseRequest = "request"
)

// TimeoutError is an attempt that ran past one of the client's Timeouts: a
// transient fault, a net.Error whose Timeout is true.
type TimeoutError struct {
	Phase string        // PhaseConnect, PhaseHeaders or PhaseRequest
	After time.Duration // the timeout that ran out
}

func (e *TimeoutError) Error() string {
	switch e.Phase {
	case PhaseConnect:
		return fmt.Sprintf("no connection to the server within %s (connect timeout)", e.After)
	case PhaseHeaders:
		return fmt.Sprintf("no response within %s of sending the request (header timeout)", e.After)
	}
	return fmt.Sprintf("the response was not received whole within %s (request timeout)", e.After)
}

func (e *TimeoutError) Timeout() bool   { return true }
func (e *TimeoutError) Temporary() bool { return true }

// Deadlines bound one attempt at a request by Timeouts: its Context is
// cancelled, with a *TimeoutError as the cause, when a phase takes too long.
// The timers are the wall clock's: they bound real I/O.
type Deadlines struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu           sync.Mutex
	whole, phase *time.Timer // phase: the connect's, then the headers'
	answered     bool
}

// StartDeadlines starts the deadlines of one request, sent with their Context.
func StartDeadlines(parent context.Context, t Timeouts) *Deadlines {
	ctx, cancel := context.WithCancelCause(parent)
	d := &Deadlines{cancel: cancel}
	d.whole = time.AfterFunc(t.Request, d.expire(PhaseRequest, t.Request))
	d.ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { d.arm(PhaseConnect, t.Connect) },
		GotConn:      func(httptrace.GotConnInfo) { d.arm("", 0) },
		WroteRequest: func(httptrace.WroteRequestInfo) { d.arm(PhaseHeaders, t.Headers) },
	})
	return d
}

// arm stops the phase timer and, unless phase is "" or the response has
// come, starts it again for phase's deadline, after from now.
func (d *Deadlines) arm(phase string, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.phase != nil {
		d.phase.Stop()
	}
	if phase != "" && !d.answered {
		d.phase = time.AfterFunc(after, d.expire(phase, after))
	}
}

func (d *Deadlines) expire(phase string, after time.Duration) func() {
	return func() { d.cancel(&TimeoutError{Phase: phase, After: after}) }
}

func (d *Deadlines) Context() context.Context { return d.ctx }

// GotResponse ends the wait for the headers (the round trip returned).
func (d *Deadlines) GotResponse() {
	d.mu.Lock()
	d.answered = true
	d.mu.Unlock()
	d.arm("", 0)
}

// Stop ends the request: its body has been read and closed.
func (d *Deadlines) Stop() {
	d.GotResponse()
	d.whole.Stop()
	d.cancel(nil)
}

// Err returns err, or the *TimeoutError that cancelled the request (which
// the round trip's bare "context canceled" does not say).
func (d *Deadlines) Err(err error) error {
	var te *TimeoutError
	if err != nil && errors.As(context.Cause(d.ctx), &te) {
		return te
	}
	return err
}
