// Package auth is cq-source-x's OAuth 2.0 user-context authentication with X: the interactive
// login (authorization code with PKCE), the token file, and a refreshing oauth2.TokenSource that
// is safe to share between goroutines and between processes.
//
// The protocol is golang.org/x/oauth2's; this package adds what X's rotating refresh tokens and
// unattended cron jobs need: a locked, atomically replaced token file and the rules for
// refreshing it (docs/auth.md). Tokens, authorization codes and the client secret never appear
// in an error or log line; fmt and slog never show them (json.Marshal of a StoredToken does).
package auth
