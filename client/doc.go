// Package client is a small, typed client for the parts of the X API v2 that
// cq-source-x needs: reading a user's bookmarks and bookmark folders, adding
// and removing a bookmark, and resolving the user behind a token.
//
// The style follows google/go-github: one typed method per endpoint, each
// returning the decoded result, a *Response (the HTTP response plus rate-limit
// and billing information) and an error. Errors are typed: *APIError for error
// statuses (matched with errors.Is against ErrUnauthorized, ErrForbidden,
// ErrCreditsDepleted, ...), *RateLimitError for 429s and for requests the
// client's own budget refused to send, *InputError for arguments rejected
// before anything is sent, *MalformedResponseError for bodies that could not
// be read or decoded, and *ErrorsOnlyError for a 2xx whose body holds only
// "errors". Pagination is explicit: every page carries Meta with the
// next_token to pass back as PageOptions.PaginationToken.
//
// Authentication is not this package's business: New takes an *http.Client
// that already adds the Authorization header (an oauth2 transport, or
// StaticToken for a fixed bearer token). The client never sees or prints the
// token.
//
// The client retries 5xx statuses, connection errors and unreadable 200
// bodies with capped exponential backoff and full jitter (or what a
// Retry-After asks) for as long as a call's retry budget lasts, 5 minutes by
// default; it never retries other 4xx statuses (402 in particular). Each
// step of a call (budget, send, 429 wait, response check and decode, retry
// decision) is a function of do.go. It keeps a request budget per
// (user, operation), seeded from DefaultLimits and corrected by every
// response's x-rate-limit-* headers, and waits for the window to reset rather
// than send a request the server would answer with 429. All waiting goes
// through an injected clock.Clock, so tests run rate-limit waits in virtual
// time. Its meter (billing.Meter) counts requests, what X bills and waits
// per (user, operation): each endpoint says what its answers bill.
// Retries, waits and refusals are logged to a zerolog.Logger (WithLogger).
//
// A Client is safe for concurrent use by several goroutines.
package client
