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

// Every key the plugin writes to the state backend, by form, and who
// writes it. Each is one account's or one sync scope's (every account, or
// one shard: shards sync at once and must not write one key), so keys are
// disjoint across accounts and tables; each begins with the name of the
// table whose resolver keeps it.
//
//	kind              form                                      value, written by
//	BookmarksMemory   x_bookmarks/<user>                        the bookmarks walk's memory and the rows to send again (resources)
//	ArchivedRecord    x_bookmarks/<user>/archived               what the account archived: its posts, their authors and dates, their media files and the rows of x_media_files to send again (this package: record.go, package archived)
//	FolderMemory      x_bookmark_folder_posts/<user>/<folder>   a folder walk's memory (resources)
//	CapRecord         <either of the above>/capped              the list's last walk stopped by the cap, or interrupted (resources)
//	FolderList        x_bookmark_folders/<user>                 the folders of the last listing (resources)
//	BilledLedger      x_api_usage/billed/<user>                 the posts and users billed today (this package: billed.go)
//	EndedSyncs        x_api_usage/ended[/<scope>]               the last syncs that ran to their end (this package: ended.go)
//	ComplianceChecks  x_post_compliance/checks/<user>           when each archived post was checked, what X said (compliance)
//	UsersCheck        x_post_compliance/users[/<scope>]         the check of the authors' accounts: its round, what X said (compliance)
//	ComplianceJob     x_post_compliance/job[/<scope>]           the compliance job of posts in progress (compliance)
//	                  x_post_compliance/users_job[/<scope>]     the compliance job of accounts in progress (compliance)
//
// Versions before the record kept what it holds under keys of their own
// (LegacyKeys), which the first sync that meets them moves into it
// (MigrateRecord): x_post_compliance/archived/<user>,
// x_post_compliance/referenced/<user>, x_post_compliance/authors/<user> and
// x_media_files/<user>.
//
// A CloudQuery sync spreads the keys over tables by account and scope
// (package plugin), each table marked by MovedKey.
//
// A value is decoded by CheckKey as its reader reads it; the compliance and
// resources packages register the decoders of their own values
// (RegisterDecoder).

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

// BookmarksKey is the key of the account's bookmarks walk.
func BookmarksKey(userID string) string { return "x_bookmarks/" + userID }

// FolderKey is the key of one folder's walk.
func FolderKey(userID, folderID string) string {
	return "x_bookmark_folder_posts/" + userID + "/" + folderID
}

// CapKey is the key of the cap record of the list whose memory is under
// listKey: its last walk that stopped at the cap or was interrupted.
func CapKey(listKey string) string { return listKey + "/capped" }

// FoldersKey is the key of the account's folder list.
func FoldersKey(userID string) string { return "x_bookmark_folders/" + userID }

// BilledKey is the key of the account's ledger of the day.
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

// JobKey is the key of a scope's compliance job ("" = every account).
func JobKey(scope string) string { return scoped("x_post_compliance/job", scope) }

func scoped(key, scope string) string {
	if scope == "" {
		return key
	}
	return key + "/" + scope
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
	table, rest, _ := strings.Cut(key, "/")
	parts := strings.Split(rest, "/")
	if list, capped := strings.CutSuffix(key, "/capped"); capped {
		if l, ok := ParseKey(list); ok && (l.Kind == BookmarksMemory || l.Kind == FolderMemory) {
			return Key{Kind: CapRecord, User: l.User, Folder: l.Folder, List: list}, true
		}
		return Key{}, false
	}
	switch {
	case table == "x_bookmarks" && len(parts) == 2 && parts[1] == "archived" && allIDs(parts[:1]):
		return Key{Kind: ArchivedRecord, User: parts[0]}, true
	case table == "x_bookmarks" && len(parts) == 1 && allIDs(parts):
		return Key{Kind: BookmarksMemory, User: parts[0]}, true
	case table == "x_bookmark_folder_posts" && len(parts) == 2 && allIDs(parts):
		return Key{Kind: FolderMemory, User: parts[0], Folder: parts[1]}, true
	case table == "x_bookmark_folders" && len(parts) == 1 && allIDs(parts):
		return Key{Kind: FolderList, User: parts[0]}, true
	case table == "x_media_files" && len(parts) == 1 && allIDs(parts):
		return Key{Kind: MediaFiles, User: parts[0]}, true
	case table == "x_api_usage" && len(parts) == 2 && parts[0] == "billed" && allIDs(parts[1:]):
		return Key{Kind: BilledLedger, User: parts[1]}, true
	case key == EndedKey("") || table == "x_api_usage" && len(parts) == 2 && parts[0] == "ended" && parts[1] != "":
		return Key{Kind: EndedSyncs, Scope: strings.TrimPrefix(strings.TrimPrefix(key, EndedKey("")), "/")}, true
	case table == "x_post_compliance" && len(parts) == 2 && parts[0] == "archived" && allIDs(parts[1:]):
		return Key{Kind: ArchivedIDs, User: parts[1]}, true
	case table == "x_post_compliance" && len(parts) == 2 && parts[0] == "referenced" && allIDs(parts[1:]):
		return Key{Kind: ReferencedIDs, User: parts[1]}, true
	case table == "x_post_compliance" && len(parts) == 2 && parts[0] == "authors" && allIDs(parts[1:]):
		return Key{Kind: AuthorIDs, User: parts[1]}, true
	case key == UsersKey("") || table == "x_post_compliance" && len(parts) == 2 && parts[0] == "users" && parts[1] != "":
		return Key{Kind: UsersCheck, Scope: strings.TrimPrefix(strings.TrimPrefix(key, UsersKey("")), "/")}, true
	case key == UsersJobKey("") || table == "x_post_compliance" && len(parts) == 2 && parts[0] == "users_job" && parts[1] != "":
		return Key{Kind: ComplianceJob, Scope: strings.TrimPrefix(strings.TrimPrefix(key, UsersJobKey("")), "/")}, true
	case table == "x_post_compliance" && len(parts) == 2 && parts[0] == "checks" && allIDs(parts[1:]):
		return Key{Kind: ComplianceChecks, User: parts[1]}, true
	case key == JobKey("") || table == "x_post_compliance" && len(parts) == 2 && parts[0] == "job" && parts[1] != "":
		return Key{Kind: ComplianceJob, Scope: strings.TrimPrefix(strings.TrimPrefix(key, JobKey("")), "/")}, true
	}
	return Key{}, false
}

// allIDs reports whether every part is an X id (of 19 digits at most, as
// X's are).
func allIDs(parts []string) bool {
	for _, p := range parts {
		if _, ok := ids.Parse(p); !ok || len(p) > 19 {
			return false
		}
	}
	return true
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

// RegisterDecoder sets how the values of kind are decoded, for the kinds
// whose values another package reads (the compliance checks, jobs and
// archived posts, the media files).
// It is called at initialization.
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
