package spec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/smallfile"
)

// Compliance configures the checks of the archive with X's free batch
// compliance job (docs/compliance.md).
type Compliance struct {
	// The X app's app-only bearer token: in the developer portal (developer.x.com), your app's "Keys and tokens" page, "Bearer Token".
	// A user's token (an account's `access_token`, or a token file from `cq-source-x login`) does not work for compliance jobs.
	BearerToken string `json:"bearer_token,omitempty"`
	// Path of a file that holds the app-only bearer token alone, instead of `bearer_token`.
	// A relative path is relative to the spec file's directory with `cq-source-x export`, and to the plugin's working directory in a CloudQuery sync, as `accounts[].token_file`.
	BearerTokenFile string `json:"bearer_token_file,omitempty"`
	// How often the archive is checked: a sync starts a check of every archived post when the last check started at least this long ago.
	// `0s` checks at every sync. Checks are free; posts X reported deleted are not checked again.
	// The default is under a day, so that a sync run daily (a little early or late) checks every day: X's Developer Policy asks that a change be acted on as soon as reasonably possible.
	Every *Duration `json:"every,omitempty" jsonschema:"default=12h"`
	// Longest a sync waits for a compliance job to finish. A job still running then is picked up by the next sync.
	Wait *Duration `json:"wait,omitempty" jsonschema:"default=10m"`
	// Most post ids one job is given. More are split into several jobs, run one after the other (X runs one job of a type at a time per app).
	MaxIDsPerJob int `json:"max_ids_per_job,omitempty" jsonschema:"minimum=1,default=100000"`
	// What the archive does with a post X reports deleted, or withheld from view (its author suspended, deactivated or protected, withheld, or a reason X adds), itself or through its author's account:
	// `redact` keeps the bookmark's key and dates and removes the post's content (its text, JSON, author, media and referenced posts);
	// `delete` removes the bookmark's row too; `keep` keeps everything, which X's Developer Policy leaves to you (docs/compliance.md).
	// The tombstone (x_post_compliance) stays in every case.
	OnChange string `json:"on_change,omitempty" jsonschema:"enum=redact,enum=delete,enum=keep,default=redact"`
	// The action for a reason, in place of `on_change`: `deleted`, `suspended`, `deactivated`, `protected`, `withheld` and `bounced` take `redact`, `delete` or `keep`
	// (a reason X adds later takes `on_change`); `scrub_geo` (X removed the post's location) takes `scrub` (the post's `geo` is removed; the default unless `on_change` is `keep`) or `keep`.
	OnChangeByReason map[string]string `json:"on_change_by_reason,omitempty"`
}

// The actions of on_change.
const (
	ActionRedact = "redact"
	ActionDelete = "delete"
	ActionKeep   = "keep"
	// ActionScrub, for scrub_geo only, removes the post's location.
	ActionScrub = "scrub"
	// ReasonScrubGeo is the reason X gives when it removed a post's location.
	ReasonScrubGeo = "scrub_geo"
)

// Reasons are the reasons X gives, which on_change_by_reason may name.
var Reasons = []string{"deleted", "suspended", "deactivated", "protected", "withheld", "bounced", ReasonScrubGeo}

// Action is what the archive does with a post X reports for reason.
func (c *Compliance) Action(reason string) string {
	if a, ok := c.OnChangeByReason[reason]; ok {
		return a
	}
	if reason == ReasonScrubGeo {
		if c.OnChange == ActionKeep {
			return ActionKeep
		}
		return ActionScrub
	}
	return c.OnChange
}

// DefaultComplianceEvery is compliance.every when it is not set.
const DefaultComplianceEvery = 12 * time.Hour

// HintAppOnlyBearerToken says where the right token comes from.
const HintAppOnlyBearerToken = "compliance jobs need the app's app-only bearer token: in the X developer portal (developer.x.com), open your app's \"Keys and tokens\" page and copy its Bearer Token"

func (c *Compliance) setDefaults() {
	orDefault(&c.Every, NewDuration(DefaultComplianceEvery))
	orDefault(&c.Wait, NewDuration(10*time.Minute))
	// X publishes no limit on a job's size; a personal archive fits in one
	// job, and more jobs cost nothing but time.
	c.MaxIDsPerJob = cmp.Or(c.MaxIDsPerJob, 100_000)
	c.OnChange = cmp.Or(c.OnChange, ActionRedact)
}

// validateCompliance reports the compliance section's problems, each naming
// its field. The token file is read when a sync starts (ReadBearerToken).
func (s *Spec) validateCompliance(addProblem func(field, format string, args ...any)) {
	c := s.Compliance
	if c == nil {
		return
	}
	add := func(field, format string, args ...any) { addProblem("compliance."+field, format, args...) }
	switch {
	case c.BearerToken == "" && c.BearerTokenFile == "":
		add("bearer_token", "set bearer_token or bearer_token_file (%s)", HintAppOnlyBearerToken)
	case c.BearerToken != "" && c.BearerTokenFile != "":
		add("bearer_token", "set bearer_token or bearer_token_file, not both")
	}
	checkCredential(add, "bearer_token", c.BearerToken)
	checkPath(add, "bearer_token_file", c.BearerTokenFile)
	for i, a := range s.Accounts {
		if c.BearerToken != "" && c.BearerToken == a.AccessToken {
			add("bearer_token", "is accounts[%d].access_token, a user's token; %s", i, HintAppOnlyBearerToken)
		}
		if c.BearerTokenFile != "" && c.BearerTokenFile == a.TokenFile {
			add("bearer_token_file", "is accounts[%d].token_file, a user's token file; %s", i, HintAppOnlyBearerToken)
		}
	}
	checkDuration(add, "every", c.Every.Duration(), 0, math.MaxInt64)
	checkDuration(add, "wait", c.Wait.Duration(), 0, MaxWait)
	checkCount(add, "max_ids_per_job", c.MaxIDsPerJob, 1, 0)
	actions := []string{ActionRedact, ActionDelete, ActionKeep}
	if !slices.Contains(actions, c.OnChange) {
		add("on_change", "must be redact, delete or keep, got %q", c.OnChange)
	}
	for _, reason := range slices.Sorted(maps.Keys(c.OnChangeByReason)) {
		action := c.OnChangeByReason[reason]
		switch {
		case !slices.Contains(Reasons, reason):
			add("on_change_by_reason", "has reason %q; the reasons are %s", reason, strings.Join(Reasons, ", "))
		case reason == ReasonScrubGeo && action != ActionScrub && action != ActionKeep:
			add("on_change_by_reason."+reason, "must be scrub or keep, got %q", action)
		case reason != ReasonScrubGeo && !slices.Contains(actions, action):
			add("on_change_by_reason."+reason, "must be redact, delete or keep, got %q", action)
		}
	}
}

// maxBearerTokenFile bounds bearer_token_file, as token files are bounded:
// a token is a few hundred bytes.
const maxBearerTokenFile = 1 << 20

// ReadBearerToken returns the bearer token, from bearer_token_file when
// that is set. A file written by `cq-source-x login` (a user's token, as
// JSON) is refused with a message that says which token is needed; so is
// a file that is not a regular file (a FIFO would block the sync, a device
// such as /dev/zero never ends) or holds more than a token.
func (c *Compliance) ReadBearerToken() (string, error) {
	if c.BearerTokenFile == "" {
		return c.BearerToken, nil
	}
	b, err := smallfile.Read(c.BearerTokenFile, maxBearerTokenFile)
	if err != nil {
		return "", fmt.Errorf("compliance.bearer_token_file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	var tokenFile map[string]json.RawMessage
	switch {
	case token == "":
		return "", fmt.Errorf("compliance.bearer_token_file %s is empty; %s", c.BearerTokenFile, HintAppOnlyBearerToken)
	case json.Unmarshal([]byte(token), &tokenFile) == nil:
		return "", fmt.Errorf("compliance.bearer_token_file %s holds JSON (a user's token file, from `cq-source-x login`?), not a bearer token alone; %s",
			c.BearerTokenFile, HintAppOnlyBearerToken)
	case strings.ContainsAny(token, " \t\r\n"):
		return "", fmt.Errorf("compliance.bearer_token_file %s holds more than one word; it must hold the token alone, without \"Bearer \"", c.BearerTokenFile)
	case credentialProblem(token) != "":
		return "", fmt.Errorf("compliance.bearer_token_file %s: the token %s", c.BearerTokenFile, credentialProblem(token))
	}
	return token, nil
}

// String describes the section without its token.
func (c Compliance) String() string {
	token := ""
	if c.BearerToken != "" {
		token = "REDACTED"
	}
	return fmt.Sprintf("{bearer_token: %s, bearer_token_file: %q, every: %s, wait: %s, max_ids_per_job: %d, on_change: %s, on_change_by_reason: %v}",
		token, c.BearerTokenFile, c.Every.Duration(), c.Wait.Duration(), c.MaxIDsPerJob, c.OnChange, c.OnChangeByReason)
}

// GoString keeps the token out of %#v.
func (c Compliance) GoString() string { return "spec.Compliance" + c.String() }
