package account

import (
	"slices"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/walk"
)

// Every form of key the plugin writes is read back to its kind and what it
// names, and nothing else is taken for one.
func TestEveryKeyFormIsReadBack(t *testing.T) {
	for key, want := range map[string]Key{
		BookmarksKey("1001"):                 {Kind: BookmarksMemory, User: "1001"},
		FolderKey("1001", "77"):              {Kind: FolderMemory, User: "1001", Folder: "77"},
		CapKey(BookmarksKey("1001")):         {Kind: CapRecord, User: "1001", List: "x_bookmarks/1001"},
		CapKey(FolderKey("1001", "77")):      {Kind: CapRecord, User: "1001", Folder: "77", List: "x_bookmark_folder_posts/1001/77"},
		FoldersKey("1001"):                   {Kind: FolderList, User: "1001"},
		BilledKey("1001"):                    {Kind: BilledLedger, User: "1001"},
		EndedKey(""):                         {Kind: EndedSyncs},
		EndedKey("shard-1-of-2"):             {Kind: EndedSyncs, Scope: "shard-1-of-2"},
		RecordKey("1001"):                    {Kind: ArchivedRecord, User: "1001"},
		LegacyKeys("1001")[0]:                {Kind: ArchivedIDs, User: "1001"},
		LegacyKeys("1001")[1]:                {Kind: ReferencedIDs, User: "1001"},
		LegacyKeys("1001")[2]:                {Kind: AuthorIDs, User: "1001"},
		LegacyKeys("1001")[3]:                {Kind: MediaFiles, User: "1001"},
		UsersKey(""):                         {Kind: UsersCheck},
		UsersKey("shard-1-of-2"):             {Kind: UsersCheck, Scope: "shard-1-of-2"},
		UsersJobKey(""):                      {Kind: ComplianceJob},
		UsersJobKey("shard-1-of-2"):          {Kind: ComplianceJob, Scope: "shard-1-of-2"},
		ChecksKey("1001"):                    {Kind: ComplianceChecks, User: "1001"},
		JobKey(""):                           {Kind: ComplianceJob},
		JobKey("shard-1-of-2"):               {Kind: ComplianceJob, Scope: "shard-1-of-2"},
		"x_api_usage/billed/1001":            {Kind: BilledLedger, User: "1001"},
		"x_post_compliance/job/shard-2-of-2": {Kind: ComplianceJob, Scope: "shard-2-of-2"},
	} {
		if got, ok := ParseKey(key); !ok || got != want {
			t.Errorf("%s: %+v (%v), want %+v", key, got, ok, want)
		}
	}
	for _, key := range []string{"x_bookmarks", "x_bookmarks/abc", "x_bookmarks/1/2", "x_bookmarks/007", "x_post_compliance/other/1",
		"x_post_compliance/job/", "x_api_usage/ended/", "x_api_usage/billed", "x_bookmark_folders/1/capped", "x_api_usage/ended/capped",
		"x_bookmarks/capped", "other/1", "x_media_files/1001/capped", "x_media_files/abc"} {
		if _, ok := ParseKey(key); ok {
			t.Errorf("%s is taken for a key the plugin writes", key)
		}
	}
}

// Every kind of key has a decoder, which finds a damaged value before a
// sync relies on it (those of the compliance keys are registered by the
// compliance package, that of the media files by resources, and tested
// there).
func TestEveryKeyIsCheckedWhenItIsRead(t *testing.T) {
	mem, err := (&walk.Memory{Held: walk.NewIDList("3", "2", "1"), SyncedAt: time.Unix(1, 0)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{
		"x_bookmarks/1001":                mem,
		"x_bookmark_folder_posts/1001/77": mem,
		"x_bookmarks/1001/capped":         `{"cap":10,"billed":10,"new":8}`,
		"x_bookmark_folders/1001":         `[{"id":"77","name":"Reading"}]`,
		"x_api_usage/ended":               `["a","b"]`,
	} {
		if known, err := CheckKey(key, value); !known || err != nil {
			t.Errorf("%s: known %v, err %v", key, known, err)
		}
		if known, err := CheckKey(key, value[:len(value)/2]); !known || err == nil {
			t.Errorf("%s cut in half: known %v, err %v", key, known, err)
		}
		if known, _ := CheckKey(key, ""); !known {
			t.Errorf("%s cleared: not known", key)
		}
	}
	// The ledger only makes estimates: one that cannot be read is dropped
	// by its reader, never a reason to refuse the state.
	if known, err := CheckKey("x_api_usage/billed/1001", "{damaged"); !known || err != nil {
		t.Errorf("a damaged ledger: known %v, err %v", known, err)
	}
	var kinds []KeyKind
	for k := range decoders {
		kinds = append(kinds, k)
	}
	registeredElsewhere := []KeyKind{ArchivedIDs, ReferencedIDs, AuthorIDs, ComplianceChecks, UsersCheck, ComplianceJob, MediaFiles}
	for k := BookmarksMemory; k <= UsersCheck; k++ {
		if !slices.Contains(registeredElsewhere, k) && !slices.Contains(kinds, k) {
			t.Errorf("kind %d has no decoder", k)
		}
	}
}
