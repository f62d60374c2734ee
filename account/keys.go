package account

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/walk"
)

// Every key the plugin writes to the state backend is one of keyForms, named
// by the function beside it; docs/design/state-layout.md says who writes each.

// MovedKey marks a table of the state's buckets (package plugin) into which
// its keys of the one table of versions before buckets were moved; its
// value names that table.
const MovedKey = "x_state/moved_from"

// KeyKind is a form of state key.
type KeyKind int

// The kinds of state key.
const (
	BookmarksMemory KeyKind = iota + 1
	FolderMemory
	CapRecord
	FolderList
	BilledLedger
	EndedSyncs
	ArchivedIDs
	ComplianceChecks
	ComplianceJob
	MediaFiles
	ReferencedIDs
	AuthorIDs
	UsersCheck
	ArchivedRecord
)

func BookmarksKey(userID string) string { return "x_bookmarks/" + userID }

func FolderKey(userID, folderID string) string {
	return "x_bookmark_folder_posts/" + userID + "/" + folderID
}

// CapKey is the key of the cap record of the list whose memory is under
// listKey: its last walk that stopped at the cap or was interrupted.
func CapKey(listKey string) string { return listKey + "/capped" }

func FoldersKey(userID string) string { return "x_bookmark_folders/" + userID }

func BilledKey(userID string) string { return "x_api_usage/billed/" + userID }

// EndedKey is the key of a scope's ended syncs ("" = every account).
func EndedKey(scope string) string { return scoped("x_api_usage/ended", scope) }

// RecordKey is the key of the account's record of what it archived.
func RecordKey(userID string) string { return BookmarksKey(userID) + "/archived" }

// LegacyKeys are the keys versions before the record kept what it holds
// under: the posts archived, the posts they reference, their authors, and
// the media files.
func LegacyKeys(userID string) [4]string {
	return [4]string{"x_post_compliance/archived/" + userID, "x_post_compliance/referenced/" + userID,
		"x_post_compliance/authors/" + userID, "x_media_files/" + userID}
}

// UsersKey is the key of a scope's check of the authors' accounts.
func UsersKey(scope string) string { return scoped("x_post_compliance/users", scope) }

// UsersJobKey is the key of a scope's compliance job of accounts.
func UsersJobKey(scope string) string { return scoped("x_post_compliance/users_job", scope) }

// ChecksKey is the key of the compliance checks of the account's posts.
func ChecksKey(userID string) string { return "x_post_compliance/checks/" + userID }

// JobKey is the key of a scope's compliance job of posts.
func JobKey(scope string) string { return scoped("x_post_compliance/job", scope) }

func scoped(key, scope string) string {
	if scope == "" {
		return key
	}
	return key + "/" + scope
}

// keyForms are the forms of key, but CapRecord's (a list's key and
// "/capped"): <user> and <folder> stand for X ids (of 19 digits at most, as
// X's are), <scope> for a sync scope, left out for every account.
var keyForms = []struct {
	kind KeyKind
	form string
}{
	{BookmarksMemory, BookmarksKey("<user>")},
	{ArchivedRecord, RecordKey("<user>")},
	{FolderMemory, FolderKey("<user>", "<folder>")},
	{FolderList, FoldersKey("<user>")},
	{BilledLedger, BilledKey("<user>")},
	{EndedSyncs, EndedKey("<scope>")},
	{ArchivedIDs, LegacyKeys("<user>")[0]},
	{ReferencedIDs, LegacyKeys("<user>")[1]},
	{AuthorIDs, LegacyKeys("<user>")[2]},
	{MediaFiles, LegacyKeys("<user>")[3]},
	{ComplianceChecks, ChecksKey("<user>")},
	{UsersCheck, UsersKey("<scope>")},
	{ComplianceJob, UsersJobKey("<scope>")},
	{ComplianceJob, JobKey("<scope>")},
}

// Key is a state key, read: its kind and what it names.
type Key struct {
	Kind         KeyKind
	User, Folder string // "" when the kind names none
	Scope        string // of EndedSyncs, UsersCheck and ComplianceJob
	// List is the key of the memory a CapRecord is beside.
	List string
}

// ParseKey reads key; ok is false for a key of a form the plugin does not
// write.
func ParseKey(key string) (k Key, ok bool) {
	if list, capped := strings.CutSuffix(key, "/capped"); capped {
		if l, ok := ParseKey(list); ok && (l.Kind == BookmarksMemory || l.Kind == FolderMemory) {
			return Key{Kind: CapRecord, User: l.User, Folder: l.Folder, List: list}, true
		}
		return Key{}, false
	}
	parts := strings.Split(key, "/")
	for _, f := range keyForms {
		if k, ok := parseForm(f.kind, strings.Split(f.form, "/"), parts); ok {
			return k, true
		}
	}
	return Key{}, false
}

// parseForm reads the parts of a key as a key of form.
func parseForm(kind KeyKind, form, parts []string) (Key, bool) {
	if form[len(form)-1] == "<scope>" && len(parts) == len(form)-1 {
		form = form[:len(parts)]
	}
	if len(parts) != len(form) {
		return Key{}, false
	}
	k := Key{Kind: kind}
	for i, p := range parts {
		switch form[i] {
		case "<user>":
			k.User = p
		case "<folder>":
			k.Folder = p
		case "<scope>":
			k.Scope = p
		case p:
			continue
		default:
			return Key{}, false
		}
		if _, isID := ids.Parse(p); p == "" || form[i] != "<scope>" && (!isID || len(p) > 19) {
			return Key{}, false
		}
	}
	return k, true
}

// decoders decode a value of each kind as its reader reads it.
var decoders = map[KeyKind]func(key, value string) error{
	BookmarksMemory: decodeListState,
	FolderMemory:    decodeListState,
	CapRecord:       func(_, v string) error { _, err := walk.UnmarshalCapStop(v); return err },
	FolderList:      func(_, v string) error { var f []client.Folder; return json.Unmarshal([]byte(v), &f) },
	// The ledger only makes estimates: its reader drops one it cannot read.
	BilledLedger: func(string, string) error { return nil },
	EndedSyncs:   func(k, v string) error { _, err := DecodeEnded(k, v); return err },
	ArchivedRecord: func(k, v string) error {
		_, err := archived.Unmarshal(v, "state "+strconv.Quote(k))
		return err
	},
	ArchivedIDs:   legacyDecoder(func(l *archived.Legacy, v string) { l.Archived = v }),
	ReferencedIDs: legacyDecoder(func(l *archived.Legacy, v string) { l.Referenced = v }),
	AuthorIDs:     legacyDecoder(func(l *archived.Legacy, v string) { l.Authors = v }),
	MediaFiles:    legacyDecoder(func(l *archived.Legacy, v string) { l.MediaFiles = v }),
}

// legacyDecoder decodes a value a version before the record kept, as the
// record's migration reads it.
func legacyDecoder(set func(*archived.Legacy, string)) func(key, value string) error {
	return func(key, value string) error {
		var l archived.Legacy
		set(&l, value)
		_, err := archived.Migrate(l, "state "+strconv.Quote(key))
		return err
	}
}

// RegisterDecoder sets, at initialization, how the values of kind are
// decoded, for the kinds whose values another package reads (compliance).
func RegisterDecoder(kind KeyKind, decode func(key, value string) error) { decoders[kind] = decode }

// CheckKey decodes value as the plugin will read the key, so that a damaged
// value is found before a sync relies on it. known is false for a key of a
// form the plugin does not write. An empty value is a key cleared (or
// never set).
func CheckKey(key, value string) (known bool, err error) {
	k, ok := ParseKey(key)
	switch {
	case !ok:
		return false, nil
	case value == "":
		return true, nil
	}
	decode := decoders[k.Kind]
	if decode == nil {
		return true, fmt.Errorf("no decoder of state %q is registered", key)
	}
	return true, decode(key, value)
}

// decodeListState decodes the memory of a list and the outbox it keeps.
func decodeListState(key, value string) error {
	mem, err := walk.UnmarshalMemory(value)
	if err != nil {
		return err
	}
	_, err = MemoryOutbox(mem, key)
	return err
}

// MemoryOutbox reads the outbox a list's memory keeps (an empty one for a
// first walk). key names the state value in errors.
func MemoryOutbox(mem *walk.Memory, key string) (*outbox.Box, error) {
	if mem == nil || len(mem.Outbox) == 0 {
		return &outbox.Box{}, nil
	}
	return outbox.Unmarshal(string(mem.Outbox), "state "+strconv.Quote(key))
}

// GetKey reads key from the state backend; an error names the key.
func GetKey(ctx context.Context, st state.Client, key string) (string, error) {
	value, err := st.GetKey(ctx, key)
	if err != nil {
		return "", fmt.Errorf("reading state %q: %w", key, err)
	}
	return value, nil
}

// SetKey sets key in the state backend; an error names the key.
func SetKey(ctx context.Context, st state.Client, key, value string) error {
	if err := st.SetKey(ctx, key, value); err != nil {
		return fmt.Errorf("writing state %q: %w", key, err)
	}
	return nil
}
