package outbox

import "encoding/json"

// Resend is what a sync, syncID, sends again of b, which it keeps (Open).
func (b *Box) Resend(syncID string, ended func(syncID string) bool, p Policy) *Box {
	return Open[json.RawMessage](b, Sync{ID: syncID, Ended: ended}, p).kept
}
