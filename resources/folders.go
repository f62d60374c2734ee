package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/walk"
)

// folder is one row of x_bookmark_folders.
type folder struct {
	userID string
	client.Folder
}

// foldersPageSize is the page size for listing folders: folders are not
// posts, and a user has few, so the largest page means fewest requests.
const foldersPageSize = 100

// Folders is the x_bookmark_folders table; its child holds their posts.
func Folders() *schema.Table {
	return &schema.Table{
		Name:        FoldersTable,
		Title:       "X Bookmark Folders",
		Description: "The user's bookmark folders. When listing folders fails, the folders remembered from the last successful sync are emitted again, so a failure never removes rows.",
		Resolver:    fetchFolders,
		Multiplex:   account.Multiplex,
		Columns: columnList([]column[*folder]{
			primaryKey(col("user_id", "X user id of the folder's owner.", func(f *folder) string { return f.userID })),
			primaryKey(col("folder_id", "Folder id.", func(f *folder) string { return f.ID })),
			col("name", "Folder name.", func(f *folder) string { return f.Name }),
		}),
		Relations: schema.Tables{FolderPosts()},
	}
}

func fetchFolders(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	s := meta.(*account.Session)
	listing := account.WalkReport{Operation: client.OpListFolders, Table: FoldersTable, List: "folders"}
	if err := s.Ready(ctx); err != nil {
		// The folders of the last successful sync again, so that
		// overwrite-delete-stale removes no row (docs/design/plugin.md#resolvers).
		listing.Err = err
		s.Report().AddWalk(listing)
		if s.UserID == "" {
			return err
		}
		remembered, rerr := rememberedFolders(ctx, s)
		emitFolders(s, remembered, res)
		return errors.Join(err, rerr)
	}
	folders, err := listFolders(ctx, s)
	if err == nil {
		b, _ := json.Marshal(folders) // ids and names: it cannot fail
		err = s.State.SetKey(ctx, account.FoldersKey(s.UserID), string(b))
	} else {
		var rerr error
		folders, rerr = rememberedFolders(ctx, s)
		err = errors.Join(fmt.Errorf("%s: listing bookmark folders: %w", s.ID(), err), rerr)
		s.Logger.Error().Bool(account.Reported, true).Err(s.Secrets.Error(err)).Int("remembered", len(folders)).Msg("listing folders failed; emitting the folders of the last successful sync")
	}
	s.SetFolderCount(len(folders))
	emitFolders(s, folders, res)
	// Listing folders reads the whole list every time: a walk to the end.
	listing.Err, listing.Result = err, &walk.Result{Outcome: walk.ReachedEnd}
	switch {
	case errors.Is(err, walk.ErrInterrupted):
		listing.Result.Outcome = walk.Interrupted
	case err != nil:
		listing.Result.Outcome = walk.Failed
	}
	s.Report().AddWalk(listing)
	return err
}

func emitFolders(s *account.Session, folders []client.Folder, res chan<- any) {
	rows := make([]*folder, len(folders))
	for i, f := range folders {
		rows[i] = &folder{userID: s.UserID, Folder: f}
	}
	if len(rows) > 0 {
		res <- rows
	}
}

// MaxFolderPages bounds the folder list, which no billed-post cap stops
// (docs/design/plugin.md#resolvers).
const MaxFolderPages = 100

// listFolders reads the whole folder list, and fails on one that goes round
// in circles or past MaxFolderPages.
func listFolders(ctx context.Context, s *account.Session) ([]client.Folder, error) {
	var out []client.Folder
	listed := map[string]bool{}
	sent := map[string]bool{}
	token := ""
	for n := 1; ; n++ {
		if n > MaxFolderPages {
			return nil, fmt.Errorf("the API sent a folder list that did not end within %d pages (%d folders listed): stopped rather than read it without end",
				MaxFolderPages, len(out))
		}
		page, _, err := s.API.ListFolders(ctx, s.UserID, client.PageOptions{MaxResults: foldersPageSize, PaginationToken: token})
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, f := range page.Data {
			if !listed[f.ID] {
				listed[f.ID] = true
				out = append(out, f)
				fresh++
			}
		}
		if page.Meta.NextToken == "" || len(page.Data) == 0 {
			return out, nil
		}
		if fresh == 0 || sent[page.Meta.NextToken] {
			return nil, fmt.Errorf("the API led the folder list round in circles: page %d holds only folders already listed, or its next_token was sent before; stopped rather than read it again without end", n)
		}
		token = page.Meta.NextToken
		sent[token] = true
	}
}

func rememberedFolders(ctx context.Context, s *account.Session) ([]client.Folder, error) {
	value, err := s.State.GetKey(ctx, account.FoldersKey(s.UserID))
	if err != nil || value == "" {
		return nil, err
	}
	var folders []client.Folder
	if err := json.Unmarshal([]byte(value), &folders); err != nil {
		return nil, fmt.Errorf("state %q is damaged: %w", account.FoldersKey(s.UserID), err)
	}
	return folders, nil
}
