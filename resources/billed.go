package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/walk"
)

// X bills each resource once per UTC day. An account's meter keeps the ids
// it saw billed on the current UTC day; the state backend carries them from
// one sync to the next of the same day, so that a second sync that day
// counts as billed only what the first did not read. They are estimates,
// never a reason to fail: a value that cannot be read is dropped.

// billedKey is the state key of an account's ledger of the day.
func billedKey(userID string) string { return "x_api_usage/billed/" + userID }

// billedValue is the ledger in the state backend.
type billedValue struct {
	Version int          `json:"version"`
	Day     string       `json:"day"`
	Posts   *walk.IDList `json:"posts"`
	Users   *walk.IDList `json:"users"`
}

// restoreBilled gives the session's meter the ledger an earlier sync of the
// same UTC day left, once; every resolver that bills calls it first.
func restoreBilled(ctx context.Context, s *account.Session) {
	if s.Meter == nil || s.State == nil || s.UserID == "" {
		return
	}
	_ = s.Meter.RestoreBilledOnce(s.UserID, func() (string, []string, []string, error) {
		value, err := s.State.GetKey(ctx, billedKey(s.UserID))
		if err != nil || value == "" {
			return "", nil, nil, nil
		}
		var v billedValue
		if err := json.Unmarshal([]byte(value), &v); err != nil || v.Version != 1 || v.Posts == nil || v.Users == nil {
			s.Logger.Warn().Str("key", billedKey(s.UserID)).Msg("the ledger of resources billed today is unreadable; this sync's usage estimates count every resource as billed")
			return "", nil, nil, nil
		}
		return v.Day, v.Posts.IDs(), v.Users.IDs(), nil
	})
}

// SaveBilled stores the ledger of the session's meter for the next sync of
// the same UTC day (and clears one of an earlier day). The plugin calls it
// after the data tables, before the state is flushed.
func SaveBilled(ctx context.Context, s *account.Session, now time.Time) error {
	if s.Meter == nil || s.State == nil || s.UserID == "" || s.Err != nil {
		return nil
	}
	day, posts, users := s.Meter.BilledToday(s.UserID)
	value := ""
	if day == now.UTC().Format(time.DateOnly) && len(posts)+len(users) > 0 {
		b, err := json.Marshal(billedValue{Version: 1, Day: day, Posts: walk.NewIDList(posts...), Users: walk.NewIDList(users...)})
		if err != nil {
			return err
		}
		value = string(b)
	}
	if value == "" {
		if old, err := s.State.GetKey(ctx, billedKey(s.UserID)); err != nil || old == "" {
			return err
		}
	}
	if err := s.State.SetKey(ctx, billedKey(s.UserID), value); err != nil {
		return fmt.Errorf("%s: writing state %q: %w", s.ID(), billedKey(s.UserID), err)
	}
	return nil
}
