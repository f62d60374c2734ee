// Package auth is cq-source-x's OAuth 2.0 user-context authentication with X: the interactive
// login (authorization code with PKCE), the token file, and a refreshing oauth2.TokenSource that
// is safe to share between goroutines and between processes.
//
// The protocol is golang.org/x/oauth2's (Config.OAuth2 returns its configuration, with the client
// authentication style set explicitly); this package adds what X's rotating refresh tokens and
// unattended cron jobs need: a locked, atomically replaced token file and the rules for
// refreshing it.
//
// # Pieces
//
//   - Login: prints the authorize URL, opens the browser, receives the redirect on a loopback
//     listener (or reads the pasted redirect URL with Headless), checks state, exchanges the code
//     with the PKCE verifier. It saves nothing; the login command resolves the user with
//     GET /2/users/me and saves a StoredToken with TokenFile.Save under TokenFile.Lock.
//   - TokenFile: Load, Save (atomic, 0600), Lock (cross-process).
//   - FileTokenSource: oauth2.TokenSource over a TokenFile; Invalidate after a 401.
//   - NewTransport: sets the Bearer header and retries once after a 401 with a refreshed token.
//
// # Token file
//
// The token file (mode 0600; Load refuses a file group or others may access on Unix) is one JSON
// object:
//
//	{
//	  "version": 1,                              // format version; Load refuses newer ones
//	  "access_token": "...",                     // Bearer token, lives 2 hours
//	  "refresh_token": "...",                    // single-use: X rotates it on every refresh
//	  "token_type": "bearer",
//	  "expiry": "2026-01-02T15:04:05Z",          // RFC 3339, UTC; absent when unknown
//	  "scope": "tweet.read users.read bookmark.read offline.access",
//	  "user_id": "12345",                        // from GET /2/users/me, set by the login command
//	  "username": "jack",
//	  "client_id": "...",                        // the app that issued the tokens; refresh must use it
//	  "updated_at": "2026-01-02T13:04:05Z"       // when this pair was obtained
//	}
//
// Next to it live FILE.lock (the lock file, empty, removed only by the logout command, with the
// token file) and, only while a refresh is in flight or after one was interrupted,
// FILE.refreshing (time, process id, host and an 8-byte SHA-256 prefix of the refresh token being
// spent; no secret). Temporary files are named
// .FILE.tmp-* and are removed on failure.
//
// # Refreshing
//
// FileTokenSource refreshes the access token when it expires within the refresh margin (default
// 5 minutes) and once after Invalidate (a 401). Under the file lock it re-reads the file: if
// another process refreshed already, it uses that token and does not refresh. Otherwise it sends
// the stored refresh token, saves the rotated pair atomically, and only then returns the new
// access token and releases the lock. So two processes never spend the same refresh token. A
// refresh response without a refresh_token keeps the old one; user_id, username and client_id are
// kept.
//
// A refresh token X rejects (HTTP 400/401 invalid_grant or invalid_request, "Value passed for the
// token was invalid.") ends in an error wrapping ErrLoginRequired; that token is never sent again
// by the same FileTokenSource. Network errors, timeouts, 429 and 5xx are *TokenEndpointError with
// Temporary() true, never ErrLoginRequired. If an early refresh (inside the margin) fails, the
// current, still valid access token is returned and the refresh is retried 30 seconds later.
//
// # Crash guarantee
//
// The token file always holds either the old complete pair or the new complete pair, never a torn
// mixture: Save writes a temporary file in the same directory, fsyncs it, renames it over the
// token file and fsyncs the directory, all while holding the lock. The new access token is not
// returned or used before the rename has succeeded.
//
// X spends the old refresh token as soon as it processes the refresh request. The only window of
// loss is therefore between the token endpoint's response and the rename: X has answered (the
// window starts while the response is still in transit, which no client can close) but the new
// pair is not yet on disk. A crash, kill, power loss or lost response in that window leaves the
// old, now-spent refresh token on disk; the next run fails fast (one request to the token
// endpoint, no retry) with an error wrapping ErrLoginRequired that says to run
// `cq-source-x login` again, and says that an earlier refresh was interrupted. No bookmark data or
// sync state is affected: the token file holds credentials only.
//
// Two measures keep the window as small as it can be. Once the refresh request is sent, the
// caller's context cancellation (Ctrl-C, a sync deadline) no longer abandons it: the request has
// its own 60-second timeout and its answer is always saved. If saving fails (disk full, read-only
// directory), the new pair is kept in memory and saving is retried on the next Token call; it is
// used only after it is on disk. Writing the new pair to a ".pending" file first would not
// narrow the window: that file, too, can only be written after the response arrives, and the
// rename that follows the fsync takes microseconds. Instead FILE.refreshing records, before the
// request is sent, that a refresh of this exact refresh token is in flight; if a later refresh
// finds it still there for the token on disk, the error explains that an earlier refresh was
// interrupted (rather than the app having been revoked).
//
// # Secrets
//
// Access and refresh tokens, authorization codes and the client secret never appear in an error
// message or log line of this package: token endpoint errors are rebuilt from the status, the
// OAuth error code and a description scrubbed of those values. Config and StoredToken implement
// String, GoString, Format and slog.LogValuer with the secrets redacted, so %v, %+v, %#v and
// slog are safe. json.Marshal of a StoredToken is the file format and does contain the tokens.
package auth
