package account

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/cloudquery/plugin-sdk/v4/state"
)

// The syncs that ran to their end let rows leave an outbox (package
// outbox): the state remembers the last of them, per sync scope.

// endedKept bounds the syncs remembered. An outbox entry asks about the
// last sync that sent it, which is the last sync of its account's tables,
// so a few suffice; one older than these is taken as stopped, and its rows
// are sent once more.
const endedKept = 64

// Ended is the ids of the syncs of a scope that ran to their end, oldest
// first.
type Ended []string

// LoadEnded reads a scope's ended syncs.
func LoadEnded(ctx context.Context, st state.Client, scope string) (Ended, error) {
	key := EndedKey(scope)
	value, err := GetKey(ctx, st, key)
	if err != nil {
		return nil, err
	}
	return DecodeEnded(key, value)
}

// DecodeEnded decodes the value of key.
func DecodeEnded(key, value string) (Ended, error) {
	if value == "" {
		return nil, nil
	}
	var ids Ended
	if err := json.Unmarshal([]byte(value), &ids); err != nil {
		return nil, fmt.Errorf("state %s: not a list of sync ids: %w", strconv.Quote(key), err)
	}
	return ids, nil
}

// Has reports whether sync id ran to its end.
func (e Ended) Has(id string) bool { return slices.Contains(e, id) }

// SaveEnded records that sync id of scope ran to its end, once the rest of
// the state is flushed: it is the last thing a sync does.
func SaveEnded(ctx context.Context, st state.Client, scope, id string) error {
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("flushing state to the backend: %w", err)
	}
	ended, err := LoadEnded(ctx, st, scope)
	if err != nil {
		return err
	}
	ended = append(ended, id)
	ended = ended[max(0, len(ended)-endedKept):]
	value, err := json.Marshal(ended)
	if err != nil {
		return err
	}
	key := EndedKey(scope)
	if err := SetKey(ctx, st, key, string(value)); err != nil {
		return err
	}
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("flushing state to the backend: %w", err)
	}
	return nil
}
