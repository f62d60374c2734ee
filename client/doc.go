// Package client is a small, typed client for the parts of the X API v2 that
// cq-source-x needs: bookmarks and bookmark folders, adding and removing a
// bookmark, the user behind a token, and batch compliance jobs.
//
// The style follows google/go-github: one typed method per endpoint, each
// returning the decoded result, a *Response (the HTTP response plus rate-limit
// and billing information) and an error, matched with errors.Is against the
// sentinels (ErrUnauthorized, ErrCreditsDepleted, ...). Pagination is
// explicit: PageOptions.PaginationToken takes a page's Meta.NextToken.
//
// New takes an *http.Client that already adds the Authorization header (an
// oauth2 transport, or StaticToken): the client never sees the token. It
// retries transient faults with capped, jittered backoff within a retry
// budget, never a 4xx; keeps a request budget per (user, operation), corrected
// by every response's x-rate-limit-* headers, so that it waits for a window
// rather than be refused; waits on an injected clock.Clock; and meters what
// X bills (billing.Meter). Each step of a call is a function of do.go.
//
// A Client is safe for concurrent use by several goroutines.
package client
