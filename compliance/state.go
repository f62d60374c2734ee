package compliance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/plan"
)

// What the checks keep in the state backend (account/keys.go names the
// keys). Unlike a pagination token, a job id stays valid between runs.

func init() {
	account.RegisterDecoder(account.ComplianceChecks, func(key, value string) error {
		return (&accountChecks{}).unmarshalChecks(value, "state "+strconv.Quote(key))
	})
	account.RegisterDecoder(account.UsersCheck, func(key, value string) error {
		_, err := unmarshalUsers(value, "state "+strconv.Quote(key))
		return err
	})
	account.RegisterDecoder(account.ComplianceJob, func(key, value string) error { _, err := decodeJob(key, value); return err })
}

// Reasons X reports a post for, by code (the state keeps codes: new
// reasons go at the end). A reason not listed (X may add some), or none, is
// kept as reasonOther, and acted on as on_change says.
var reasonNames = []string{"", "deleted", "suspended", "protected", "bounced", "scrub_geo", "deactivated", "withheld"}

const (
	reasonClean    uint8 = 0
	reasonDeleted  uint8 = 1
	reasonScrubGeo uint8 = 5
	reasonOther    uint8 = 255
)

// reasonCode is the code of a reason X reported.
func reasonCode(reason string) uint8 {
	if i := slices.Index(reasonNames, reason); i > 0 {
		return uint8(i)
	}
	return reasonOther
}

// check is when a post was last checked (Unix milliseconds), what X said
// of it then, and the strongest action applied to it (an Action).
type check struct {
	id      uint64
	at      int64
	reason  uint8
	applied uint8
}

// accountChecks is one account's side of the checks.
type accountChecks struct {
	userID string
	// archived is every post checked: bookmarks and referenced.
	archived, bookmarks, referenced ids.Sorted
	authors                         map[uint64]ids.Sorted // the posts of each author
	record                          *archived.Record
	checks                          []check // sorted by id
	// roundStart is when the account's current check round started (zero:
	// none running); lastRound when its last finished round started.
	roundStart, lastRound time.Time
	changed               bool
	// outbox is the rows earlier syncs sent; rows, once resendFindings
	// opened it, those this sync sends again and the ones it found.
	outbox *outbox.Box
	rows   *outbox.Rows[*Finding]
}

func byID(c check, id uint64) int { return cmp.Compare(c.id, id) }

func (a *accountChecks) find(id uint64) (check, bool) {
	i, ok := slices.BinarySearchFunc(a.checks, id, byID)
	if !ok {
		return check{}, false
	}
	return a.checks[i], true
}

// setAll records checks, each id once.
func (a *accountChecks) setAll(updates []check) {
	n := len(a.checks)
	for _, u := range updates {
		if i, ok := slices.BinarySearchFunc(a.checks[:n], u.id, byID); ok {
			a.checks[i] = u
		} else {
			a.checks = append(a.checks, u)
		}
	}
	if len(a.checks) > n {
		slices.SortFunc(a.checks, func(x, y check) int { return cmp.Compare(x.id, y.id) })
	}
	a.changed = a.changed || len(updates) > 0
}

// due reports whether the round running checks id: not checked since the
// round started, and not reported deleted (a deleted post stays deleted).
func (a *accountChecks) due(id uint64) bool {
	if a.roundStart.IsZero() {
		return false
	}
	c, ok := a.find(id)
	return !ok || (c.reason != reasonDeleted && c.at < a.roundStart.UnixMilli())
}

// hasDue reports whether the round has posts left to check.
func (a *accountChecks) hasDue() bool { return slices.ContainsFunc(a.archived, a.due) }

type checksJSON struct {
	Version    int       `json:"version"`
	RoundStart time.Time `json:"round_started,omitzero"`
	LastRound  time.Time `json:"last_round,omitzero"`
	Count      int       `json:"count"`
	Checks     string    `json:"checks"`
	// Outbox is the rows of x_post_compliance to send again (package outbox).
	Outbox json.RawMessage `json:"outbox,omitempty"`
}

// checksVersion 2 added what was applied to each post (none in version 1).
const checksVersion = 2

func (a *accountChecks) marshalChecks() (string, error) {
	raw := binary.AppendUvarint(nil, uint64(len(a.checks)))
	var prev uint64
	for _, c := range a.checks {
		raw = binary.AppendUvarint(raw, c.id-prev)
		raw = binary.AppendVarint(raw, c.at)
		raw = append(raw, c.reason, c.applied)
		prev = c.id
	}
	text, err := ids.Pack(raw)
	if err != nil {
		return "", err
	}
	box := a.outbox // what resendFindings kept, then the rows this sync sent
	if a.rows != nil {
		if box, err = a.rows.Box(); err != nil {
			return "", err
		}
	}
	boxText, err := box.Marshal()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(checksJSON{Version: checksVersion, RoundStart: a.roundStart.UTC(), LastRound: a.lastRound.UTC(),
		Count: len(a.checks), Checks: string(text), Outbox: json.RawMessage(boxText)})
	return string(b), err
}

func (a *accountChecks) unmarshalChecks(value, what string) error {
	if value == "" {
		a.outbox = &outbox.Box{}
		return nil
	}
	var j checksJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if j.Version != checksVersion && j.Version != 1 {
		return fmt.Errorf("%s has version %d; this build reads version %d", what, j.Version, checksVersion)
	}
	raw, err := ids.Unpack([]byte(j.Checks), what)
	if err != nil {
		return err
	}
	r := bytes.NewReader(raw)
	count, err := binary.ReadUvarint(r)
	if err != nil || count != uint64(j.Count) || count > uint64(len(raw)) {
		return fmt.Errorf("%s is damaged: bad count", what)
	}
	a.checks = make([]check, count)
	var prev uint64
	for i := range a.checks {
		d, err1 := binary.ReadUvarint(r)
		at, err2 := binary.ReadVarint(r)
		reason, err3 := r.ReadByte()
		var applied byte
		var err4 error
		if j.Version > 1 {
			applied, err4 = r.ReadByte()
		}
		if err := errors.Join(err1, err2, err3, err4); err != nil || (i > 0 && d == 0) || applied > byte(plan.Delete) {
			return fmt.Errorf("%s is damaged at check %d of %d", what, i, count)
		}
		prev += d
		a.checks[i] = check{id: prev, at: at, reason: reason, applied: applied}
	}
	if r.Len() != 0 {
		return fmt.Errorf("%s is damaged: trailing bytes", what)
	}
	a.roundStart, a.lastRound = j.RoundStart, j.LastRound
	a.outbox, err = outbox.Unmarshal(string(j.Outbox), what)
	return err
}

// jobRecord is the job in progress, to resume it in a later run.
type jobRecord struct {
	ID string `json:"id"`
	// Type is client.ComplianceUsers or ComplianceTweets ("" reads as the
	// latter).
	Type      string     `json:"type,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	Uploaded  bool       `json:"uploaded"`
	IDs       ids.Sorted `json:"-"`
}

// results are a complete job's results by id, of the ids it was given.
type results = map[uint64]client.ComplianceResult

type jobRecordJSON struct {
	Version int `json:"version"`
	jobRecord
	Count int    `json:"count"`
	Text  string `json:"ids"`
}

const jobVersion = 1

// decodeJob decodes the job record stored under key.
func decodeJob(key, value string) (*jobRecord, error) {
	var j jobRecordJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, fmt.Errorf("state %q is not valid JSON: %w", key, err)
	}
	if j.Version != jobVersion {
		return nil, fmt.Errorf("state %q has version %d; this build reads version %d", key, j.Version, jobVersion)
	}
	nums, err := ids.UnmarshalSorted(j.Text, "state "+strconv.Quote(key))
	if err != nil {
		return nil, err
	}
	if len(nums) != j.Count || j.ID == "" {
		return nil, fmt.Errorf("state %q is damaged", key)
	}
	j.IDs = nums
	return &j.jobRecord, nil
}

// saveJob stores the record (nil clears it) and, with flush, writes the
// state backend at once: a job must not be lost to a run that stops.
func saveJob(ctx context.Context, st state.Client, key string, rec *jobRecord, flush bool) error {
	value := ""
	if rec != nil {
		text, err := rec.IDs.Marshal()
		if err != nil {
			return err
		}
		b, err := json.Marshal(jobRecordJSON{Version: jobVersion, jobRecord: *rec, Count: len(rec.IDs), Text: text})
		if err != nil {
			return err
		}
		value = string(b)
	}
	if err := account.SetKey(ctx, st, key, value); err != nil || !flush {
		return err
	}
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("flushing state %q: %w", key, err)
	}
	return nil
}
