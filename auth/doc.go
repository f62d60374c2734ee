// Package auth is cq-source-x's OAuth 2.0 user-context authentication with X, on
// golang.org/x/oauth2: the PKCE login, the token file (locked, atomically replaced) and a
// refreshing oauth2.TokenSource shared by goroutines and processes (rules: docs/auth.md).
// Tokens, codes and the client secret never appear in an error or log line, nor in fmt or slog.
package auth
