// Package auth is cq-source-x's OAuth 2.0 user-context authentication with X: the interactive
// login (authorization code with PKCE), the token file, and a refreshing oauth2.TokenSource that
// is safe to share between goroutines and between processes.
//
// The protocol is golang.org/x/oauth2's; this package adds what X's rotating refresh tokens and
// unattended cron jobs need: a locked, atomically replaced token file (TokenFile) and the rules
// for refreshing it (FileTokenSource): under the file lock, the file re-read first, the rotated
// pair saved before it is used. docs/auth.md gives the file's format, the refresh rules and the
// crash guarantee.
//
// Access and refresh tokens, authorization codes and the client secret never appear in an error
// message or log line of this package. Config and StoredToken implement String, Format
// and slog.LogValuer with the secrets redacted; json.Marshal of a StoredToken is the file format
// and does contain the tokens.
package auth
