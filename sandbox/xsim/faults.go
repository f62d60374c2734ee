package xsim

import (
	"slices"
	"time"
)

// Faults configures deterministic fault injection. Each request to an
// operation the faults apply to gets a sequence number N (1, 2, ... since the
// server started or SetFaults was last called); what happens to it is
// Faults.Decide(N), a pure function of (Seed, N). The rates are cumulative
// probabilities checked in the order server error, rate limit, connection
// reset, truncation.
type Faults struct {
	Seed            int64
	ServerErrorRate float64       // 500/502/503/504 with a problem-details body
	RateLimitRate   float64       // 429 with remaining 0 and a reset 1-5 s ahead
	ConnResetRate   float64       // hijack and close (RST) without a response
	TruncateRate    float64       // a 200 with a valid header and half its body (billed)
	Latency         time.Duration // real time.Sleep before every such request
	Operations      []string      // empty = all operations, including OpToken and OpRevoke
}

// FaultKind is what fault injection does to one request.
type FaultKind int

const (
	FaultNone FaultKind = iota
	FaultServerError
	FaultRateLimit
	FaultConnReset
	FaultTruncate
)

func (k FaultKind) String() string {
	switch k {
	case FaultServerError:
		return "server_error"
	case FaultRateLimit:
		return "rate_limit"
	case FaultConnReset:
		return "conn_reset"
	case FaultTruncate:
		return "truncate"
	}
	return "none"
}

// Fault is the decision for one request.
type Fault struct {
	Kind    FaultKind
	Status  int           // for FaultServerError: 500, 502, 503 or 504; 429 for FaultRateLimit
	ResetIn time.Duration // for FaultRateLimit: how far ahead the reset header points
}

// Applies reports whether the faults apply to operation op.
func (f Faults) Applies(op string) bool {
	return len(f.Operations) == 0 || slices.Contains(f.Operations, op)
}

func (f Faults) active() bool {
	return f.ServerErrorRate > 0 || f.RateLimitRate > 0 || f.ConnResetRate > 0 || f.TruncateRate > 0 || f.Latency > 0
}

// Decide returns the fault for the n-th request: a pure function of (Seed, n).
func (f Faults) Decide(n int) Fault {
	h := mix64(uint64(f.Seed)*0x9e3779b97f4a7c15 ^ mix64(uint64(n)))
	u := float64(h>>11) / (1 << 53)
	h2 := mix64(h ^ 0x2545f4914f6cdd1d)
	p := f.ServerErrorRate
	if u < p {
		return Fault{Kind: FaultServerError, Status: [...]int{500, 502, 503, 504}[h2%4]}
	}
	if p += f.RateLimitRate; u < p {
		return Fault{Kind: FaultRateLimit, Status: 429, ResetIn: time.Duration(1+h2%5) * time.Second}
	}
	if p += f.ConnResetRate; u < p {
		return Fault{Kind: FaultConnReset}
	}
	if p += f.TruncateRate; u < p {
		return Fault{Kind: FaultTruncate, Status: 200}
	}
	return Fault{}
}

// SetFaults replaces the fault configuration and restarts the sequence at 1.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Operations = slices.Clone(f.Operations)
	s.faults = f
	s.faultN = 0
}

// nextFault numbers a request to op and decides its fault.
func (s *Server) nextFault(op string) (Fault, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	if !f.active() || !f.Applies(op) {
		return Fault{}, 0
	}
	s.faultN++
	return f.Decide(s.faultN), f.Latency
}
