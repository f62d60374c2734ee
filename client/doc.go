// Package client is a typed client for the parts of the X API v2 that
// cq-source-x needs: bookmarks and bookmark folders, adding and removing a
// bookmark, the user behind a token, and batch compliance jobs. As in
// google/go-github, each endpoint is a method returning its result, a
// *Response and an error matched with errors.Is; New takes an *http.Client
// that adds the Authorization header (the client never sees the token).
// Each step of a call is a function of do.go. A Client is safe for concurrent use.
package client
