package auth

import (
	"context"
	"time"
)

// Refresh refreshes the token now, whatever its expiry, by the rules every
// refresh follows (under the file lock, the file re-read first, the rotated
// pair saved before it is returned), and returns the pair in use afterwards.
// When another process refreshed the file since it was read, that pair is
// returned and no request is sent. After a failure the access token read
// before is no longer used by s.
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
