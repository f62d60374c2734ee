package auth

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/cq-source-x/cq-source-x/internal/bearer"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
)

// Defaults of the FileTokenSource.
const (
	DefaultRefreshMargin  = 5 * time.Minute
	DefaultLockTimeout    = 2 * time.Minute
	DefaultRequestTimeout = 60 * time.Second
	expiryDelta           = 10 * time.Second // a token this close to its expiry is expired (clock skew, latency)
	earlyRetryBackoff     = 30 * time.Second // after an early refresh failed, the wait before the next
)

type SourceOption func(*FileTokenSource)

// WithHTTPClient sets the HTTP client for the token endpoint. The default has a 30-second
// timeout (never http.DefaultClient, which waits forever).
func WithHTTPClient(c *http.Client) SourceOption {
	return func(s *FileTokenSource) { s.httpClient = cmp.Or(c, s.httpClient) }
}

// WithClock sets the clock that decides expiry (default clock.Real).
func WithClock(c clock.Clock) SourceOption {
	return func(s *FileTokenSource) { s.clock = cmp.Or(c, s.clock) }
}

// WithRefreshMargin sets how long before expiry the token is refreshed (default 5m; 0 to 1h).
func WithRefreshMargin(d time.Duration) SourceOption {
	return func(s *FileTokenSource) { s.margin = d }
}

// WithLogger sets the logger for refreshes (default: none); lines never hold a secret.
func WithLogger(l zerolog.Logger) SourceOption {
	return func(s *FileTokenSource) { s.log = l }
}

// WithSecrets makes the source add to r every credential it holds, as soon as it has it.
func WithSecrets(r *secrets.Mask) SourceOption {
	return func(s *FileTokenSource) { s.secrets = r }
}

// FileTokenSource is an oauth2.TokenSource backed by a TokenFile, safe for concurrent use by
// goroutines and processes (docs/auth.md gives the refresh rules).
type FileTokenSource struct {
	ctx         context.Context
	oc          *oauth2.Config
	file        TokenFile
	clock       clock.Clock
	margin      time.Duration
	lockTimeout time.Duration
	httpClient  *http.Client
	log         zerolog.Logger
	secrets     *secrets.Mask

	mu          sync.Mutex
	cur         *StoredToken // last token read from or written to the file
	invalid     string       // access token reported rejected by Invalidate
	dead        string       // fingerprint of a refresh token X rejected: never sent again
	deadErr     error
	retryAfter  time.Time    // no early refresh attempt before this
	unsaved     *StoredToken // refreshed pair whose Save failed (not usable until saved)
	unsavedFrom string       // the refresh token spent to get unsaved
}

var _ oauth2.TokenSource = (*FileTokenSource)(nil)

// NewFileTokenSource loads file and returns a token source for it; Token runs in ctx. A file
// missing, empty or issued to another client id wraps ErrLoginRequired.
func NewFileTokenSource(ctx context.Context, cfg Config, file TokenFile, opts ...SourceOption) (*FileTokenSource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &FileTokenSource{
		ctx:         ctx,
		oc:          cfg.OAuth2(),
		file:        file,
		clock:       clock.Real{},
		margin:      DefaultRefreshMargin,
		lockTimeout: DefaultLockTimeout,
		httpClient:  defaultHTTPClient(),
		log:         zerolog.Nop(),
	}
	for _, o := range opts {
		o(s)
	}
	if s.margin < 0 || s.margin > time.Hour {
		return nil, fmt.Errorf("auth: refresh margin %v is out of range (0 to 1h; access tokens live 2h)", s.margin)
	}
	s.secrets.AddBasic(cfg.ClientID, cfg.ClientSecret)
	st, err := s.reload()
	if err != nil {
		return nil, err
	}
	s.cur = st
	return s, nil
}

func defaultHTTPClient() *http.Client { return &http.Client{Timeout: 30 * time.Second} }

// Stored returns a copy of the token currently in use (formatting it is safe; see StoredToken).
func (s *FileTokenSource) Stored() StoredToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.cur
}

// Token returns a valid access token, refreshed first when it is due.
func (s *FileTokenSource) Token() (*oauth2.Token, error) { return s.TokenContext(s.ctx) }

// TokenContext is Token with a per-call context, which bounds the wait for the lock, not a refresh
// request once sent (its answer must be saved, or the rotated refresh token would be lost).
func (s *FileTokenSource) TokenContext(ctx context.Context) (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if s.unsaved == nil && s.fresh(s.cur, now) {
		return s.cur.OAuth2(), nil
	}
	if s.usable(s.cur, now) && now.Before(s.retryAfter) {
		return s.cur.OAuth2(), nil
	}
	st, err := s.refreshLocked(ctx)
	if err == nil {
		s.retryAfter = time.Time{}
		return st.OAuth2(), nil
	}
	if now = s.clock.Now(); s.usable(s.cur, now) && s.unsaved == nil {
		// Refreshing early failed but the current token is still good: use it and try again
		// later. Not when the answer could not be saved: the refresh token on disk is spent,
		// and the caller must hear of it now, not when the process has ended.
		s.retryAfter = now.Add(earlyRetryBackoff)
		s.log.Warn().Str("token_file", s.file.Path).Time("expiry", s.cur.Expiry).Str("error", s.secrets.String(err.Error())).
			Msg("auth: early token refresh failed; using the current access token until it expires")
		return s.cur.OAuth2(), nil
	}
	return nil, err
}

// Refresh refreshes the token now, whatever its expiry, and returns the pair in use afterwards
// (another process's, when it refreshed since). After a failure s drops its access token.
func (s *FileTokenSource) Refresh(ctx context.Context) (StoredToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalid = s.cur.AccessToken
	st, err := s.refreshLocked(ctx)
	if err != nil {
		return StoredToken{}, err
	}
	s.retryAfter = time.Time{}
	return *st, nil
}

// Invalidate reports that accessToken, if current, was rejected (HTTP 401): the next Token call
// refreshes, unless the file holds a newer token.
func (s *FileTokenSource) Invalidate(accessToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if accessToken != "" && s.cur != nil && s.cur.AccessToken == accessToken {
		s.invalid = accessToken
		s.retryAfter = time.Time{}
	}
}

// usable: not invalidated and not (about to be) expired.
func (s *FileTokenSource) usable(t *StoredToken, now time.Time) bool {
	return t != nil && t.AccessToken != "" && t.AccessToken != s.invalid &&
		(t.Expiry.IsZero() || now.Before(t.Expiry.Add(-expiryDelta)))
}

// fresh: usable and not within the refresh margin.
func (s *FileTokenSource) fresh(t *StoredToken, now time.Time) bool {
	return s.usable(t, now) && (t.Expiry.IsZero() || now.Before(t.Expiry.Add(-max(s.margin, expiryDelta))))
}

// refreshLocked, with s.mu held, takes the file lock, re-reads the file, and uses a token someone
// else refreshed, or refreshes and saves before returning the new token.
func (s *FileTokenSource) refreshLocked(ctx context.Context) (*StoredToken, error) {
	lctx, cancel := context.WithTimeout(ctx, s.lockTimeout)
	unlock, err := s.file.Lock(lctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("auth: waiting for the token file lock (another cq-source-x process may be refreshing): %w", err)
	}
	defer func() { _ = unlock() }()

	disk, err := s.reload()
	if err != nil {
		return nil, err
	}
	if disk, err = s.saveUnsaved(disk); err != nil {
		return nil, err
	}
	now, prev := s.clock.Now(), s.cur
	s.cur = disk
	if s.fresh(disk, now) { // another process, or a login, saved a fresh token
		if disk.AccessToken != prev.AccessToken {
			s.log.Info().Str("token_file", s.file.Path).Time("expiry", disk.Expiry).Msg("auth: using the access token another process refreshed")
		}
		return disk, nil
	}
	fp, err := s.refreshable(disk)
	if err != nil {
		return nil, err
	}
	hint, err := s.recordIntent(fp, now)
	if err != nil {
		return nil, err
	}
	tok, start, err := s.sendRefresh(ctx, disk, fp, hint)
	if err != nil {
		return nil, err
	}
	return s.saveRefreshed(tok, start, disk)
}

// reload reads the token file and checks it was issued to this client.
func (s *FileTokenSource) reload() (*StoredToken, error) {
	disk, err := s.file.Load()
	if err != nil {
		return nil, err
	}
	s.secrets.Add(disk.AccessToken, disk.RefreshToken)
	if disk.ClientID != "" && disk.ClientID != s.oc.ClientID {
		return nil, fmt.Errorf("auth: token file %s was issued to client id %q but the configuration uses client id %q; a refresh token works only with the app that issued it: %w",
			s.file.Path, disk.ClientID, s.oc.ClientID, ErrLoginRequired)
	}
	return disk, nil
}

// saveUnsaved saves a refreshed pair that could not be saved earlier, if the file still holds
// the pair it replaces (else a new login made it obsolete), and returns the file's pair.
func (s *FileTokenSource) saveUnsaved(disk *StoredToken) (*StoredToken, error) {
	if s.unsaved == nil {
		return disk, nil
	}
	if disk.RefreshToken == s.unsavedFrom {
		if err := s.file.Save(s.unsaved); err != nil {
			return nil, fmt.Errorf("auth: saving the refreshed token (retry) failed: %w; if this process ends before it succeeds, run `cq-source-x login` again", err)
		}
		s.file.removeIntent()
		disk = s.unsaved
	}
	s.unsaved, s.unsavedFrom = nil, ""
	return disk, nil
}

// refreshable returns the fingerprint of disk's refresh token, or why it cannot be sent.
func (s *FileTokenSource) refreshable(disk *StoredToken) (string, error) {
	if disk.RefreshToken == "" {
		return "", fmt.Errorf("auth: the access token in %s has expired and the file holds no refresh token (was %q granted?): %w",
			s.file.Path, ScopeOfflineAccess, ErrLoginRequired)
	}
	fp := fingerprint(disk.RefreshToken)
	if fp == s.dead {
		return "", s.deadErr
	}
	return fp, nil
}

// recordIntent marks a refresh of the token fp as started; an earlier refresh's marker is kept,
// and the hint returned says it was interrupted.
func (s *FileTokenSource) recordIntent(fp string, now time.Time) (hint string, err error) {
	if in := s.file.readIntent(); in != nil && in.Fingerprint == fp {
		return fmt.Sprintf("an earlier refresh of this token (started %s by process %d on %q) was interrupted before its result was saved, so X has probably rotated it already",
			fmtTime(in.StartedAt), in.PID, in.Host), nil
	}
	host, _ := os.Hostname()
	if err := s.file.writeIntent(&refreshIntent{StartedAt: now.UTC(), Fingerprint: fp, PID: os.Getpid(), Host: host}); err != nil {
		// X rotates the refresh token it is sent: a directory that cannot take this small
		// marker (disk full, quota) would most likely not take the new pair either, and the
		// only valid refresh token would be lost. Do not send it.
		return "", fmt.Errorf("auth: not refreshing the token in %s: its directory cannot be written (%w), so the rotated refresh token X returns could not be saved", s.file.Path, err)
	}
	return "", nil
}

// sendRefresh sends disk's refresh token, unless ctx has ended, and returns X's answer and
// when the request started.
func (s *FileTokenSource) sendRefresh(ctx context.Context, disk *StoredToken, fp, hint string) (*oauth2.Token, time.Time, error) {
	if err := ctx.Err(); err != nil {
		if hint == "" {
			s.file.removeIntent() // nothing was sent: no refresh is in flight
		}
		return nil, time.Time{}, fmt.Errorf("auth: refresh not started: %w", err)
	}
	// From here on the refresh token may be spent at X: do not let the caller's cancellation
	// abandon the answer.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRequestTimeout)
	defer rcancel()
	rctx = context.WithValue(rctx, oauth2.HTTPClient, s.httpClient)
	start := s.clock.Now()
	tok, err := s.oc.TokenSource(rctx, &oauth2.Token{RefreshToken: disk.RefreshToken}).Token()
	if err != nil {
		return nil, start, s.refreshFailed(err, disk, fp, hint)
	}
	return tok, start, nil
}

// refreshFailed is the error of a failed refresh; a refresh token X rejected is never sent again.
func (s *FileTokenSource) refreshFailed(err error, disk *StoredToken, fp, hint string) error {
	te := tokenEndpointError("refresh", err, disk.RefreshToken, disk.AccessToken, s.oc.ClientSecret)
	if te.LoginRequired {
		te.Hint = hint
		s.dead, s.deadErr = fp, te
	}
	if !te.Transient && hint == "" {
		// X refused this refresh: its marker must not make a later run blame an interrupted
		// one. An earlier, really interrupted refresh's marker (hint != "") is kept.
		s.file.removeIntent()
	}
	return te
}

// saveRefreshed saves the pair X returned, completed from the one it replaces, before it is
// used; one that cannot be saved is kept and saved on next use.
func (s *FileTokenSource) saveRefreshed(tok *oauth2.Token, start time.Time, disk *StoredToken) (*StoredToken, error) {
	next := NewStoredToken(tok, s.oc.ClientID, start)
	s.secrets.Add(next.AccessToken, next.RefreshToken)
	next.RefreshToken = cmp.Or(next.RefreshToken, disk.RefreshToken) // not rotated this time: keep the old one
	next.Scope = cmp.Or(next.Scope, disk.Scope)
	next.UserID, next.Username = disk.UserID, disk.Username
	if err := s.file.Save(next); err != nil {
		s.unsaved, s.unsavedFrom = next, disk.RefreshToken
		return nil, fmt.Errorf("auth: refreshed the token but could not save it: %w; the new token is kept in memory and saving is retried on next use; if this process ends first, run `cq-source-x login` again", err)
	}
	s.file.removeIntent()
	s.cur = next
	s.log.Info().Str("token_file", s.file.Path).Time("expiry", next.Expiry).Msg("auth: access token refreshed")
	return next, nil
}

// NewTransport returns a RoundTripper that sends src's access token and, on a 401, sends the
// request once more with a refreshed one (bearer.Transport). base nil: http.DefaultTransport.
func NewTransport(src *FileTokenSource, base http.RoundTripper) http.RoundTripper {
	token := func(ctx context.Context) (string, error) {
		tok, err := src.TokenContext(ctx)
		if err != nil {
			return "", err
		}
		return tok.AccessToken, nil
	}
	return &bearer.Transport{Base: base, Token: token, Renew: func(ctx context.Context, refused string) (string, error) {
		src.log.Info().Str("token_file", src.file.Path).Msg("auth: the API answered 401; refreshing the access token and sending the request again")
		src.Invalidate(refused)
		tok, err := token(ctx)
		if err != nil {
			return "", fmt.Errorf("auth: the API answered 401 and the access token could not be refreshed: %w", err)
		}
		return tok, nil
	}}
}
