// Package client is a small, typed client for the parts of the X API v2 that
// cq-source-x needs: bookmarks and bookmark folders, adding and removing a
// bookmark, the user behind a token, and batch compliance jobs.
//
// The style follows google/go-github: one typed method per endpoint, each
// returning the decoded result, a *Response and an error matched with
// errors.Is against the sentinels; pagination is explicit (Meta.NextToken).
// New takes an *http.Client that adds the Authorization header: the client
// never sees the token. It retries transient faults within a retry budget,
// keeps a request budget per (user, operation) so that it waits for a window
// rather than be refused, waits on an injected clock.Clock, and meters what
// X bills (billing.Meter). Each step of a call is a function of do.go.
// A Client is safe for concurrent use.
package client
