package resources

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/walk"
)

// CheckState decodes value as the resolvers will read the state key key, so
// that a damaged value is found before a sync relies on it. known is false
// for a key of a form this plugin does not write. An empty value is a key
// cleared (or never set).
func CheckState(key, value string) (known bool, err error) {
	decode := stateDecoder(key)
	switch {
	case decode == nil:
		return false, nil
	case value == "":
		return true, nil
	}
	return true, decode(value)
}

// IsStateKey reports whether the plugin writes state keys of key's form.
func IsStateKey(key string) bool { return stateDecoder(key) != nil }

// stateDecoder returns the decoder of the values of key, nil for a key of a
// form this plugin does not write. These are the keys:
//
//	x_bookmarks/<user>                              walk memory, with the rows to send again
//	x_bookmark_folder_posts/<user>/<folder>         walk memory
//	<either of the above>/capped                    a walk stopped by the billed-post cap, or interrupted
//	x_bookmark_folders/<user>                       the folder list
//	x_media_files/<user>                            the files of the media of the posts read, with the rows to send again
//	x_post_compliance/archived/<user>               ids of the posts archived
//	x_post_compliance/checks/<user>                 the compliance checks of those posts
//	x_post_compliance/job[/<scope>]                 a compliance job in progress
//	x_api_usage/ended[/<scope>]                     the last syncs that ran to their end
func stateDecoder(key string) func(value string) error {
	table, rest, _ := strings.Cut(key, "/")
	parts := strings.Split(rest, "/")
	capped := len(parts) > 1 && parts[len(parts)-1] == "capped"
	if capped {
		parts = parts[:len(parts)-1]
	}
	what := "state " + strconv.Quote(key)
	switch {
	case (table == BookmarksTable && len(parts) == 1 || table == FolderPostsTable && len(parts) == 2) && allIDs(parts):
		if capped {
			return func(v string) error { _, err := walk.UnmarshalCapStop(v); return err }
		}
		return func(v string) error { return decodeListState(key, v) }
	case table == MediaFilesTable && len(parts) == 1 && !capped && allIDs(parts):
		return func(v string) error { _, err := decodeMediaState(key, v); return err }
	case table == FoldersTable && len(parts) == 1 && !capped && allIDs(parts):
		return func(v string) error { var f []client.Folder; return json.Unmarshal([]byte(v), &f) }
	case key == account.EndedKeyPrefix || table == APIUsageTable && len(parts) == 2 && parts[0] == "ended" && parts[1] != "" && !capped:
		return func(v string) error { _, err := account.DecodeEnded(key, v); return err }
	case table != PostComplianceTable || capped:
		return nil
	case parts[0] == "job" && (len(parts) == 1 || len(parts) == 2 && parts[1] != ""):
		return func(v string) error { _, err := decodeJob(key, v); return err }
	case parts[0] == "archived" && len(parts) == 2 && allIDs(parts[1:]):
		return func(v string) error { _, err := unmarshalPostIDs(v, what); return err }
	case parts[0] == "checks" && len(parts) == 2 && allIDs(parts[1:]):
		return func(v string) error { return (&accountChecks{}).unmarshalChecks(v, what) }
	}
	return nil
}

// IsArchivedKey reports whether key records an account's archived post
// ids, which a destination that keeps them itself does not need
// (Session.Archived).
func IsArchivedKey(key string) bool { return strings.HasPrefix(key, archivedKeyPrefix) }

func allIDs(parts []string) bool {
	for _, p := range parts {
		if _, ok := parsePostID(p); !ok || len(p) > 19 {
			return false
		}
	}
	return true
}
