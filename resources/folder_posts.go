package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/walk"
)

// folderPost is one row of x_bookmark_folder_posts.
type folderPost struct {
	userID, folderID, postID string
}

// FolderPosts is the x_bookmark_folder_posts table: post ids only.
func FolderPosts() *schema.Table {
	return &schema.Table{
		Name:  FolderPostsTable,
		Title: "X Bookmark Folder Posts",
		Description: "Membership of each bookmark folder, newest added first. Each sync emits the whole membership, " +
			"built from an incremental walk of the folder (the same walk as bookmarks: only new entries are read and billed). " +
			"A folder's membership is replaced only when its walk completed; when it fails, the previous membership is emitted again.",
		Resolver: fetchFolderPosts,
		Columns: columnList([]column[*folderPost]{
			primaryKey(col("user_id", "X user id of the folder's owner.", func(p *folderPost) string { return p.userID })),
			primaryKey(col("folder_id", "Folder id.", func(p *folderPost) string { return p.folderID })),
			primaryKey(col("post_id", "Id of a post in the folder.", func(p *folderPost) string { return p.postID })),
		}),
	}
}

func fetchFolderPosts(ctx context.Context, meta schema.ClientMeta, parent *schema.Resource, res chan<- any) error {
	s := meta.(*account.Session)
	f := parent.Item.(*folder)
	key := account.FolderKey(s.UserID, f.ID)
	list := "folder " + f.ID
	report := account.WalkReport{Operation: client.OpGetFolder, Table: FolderPostsTable, List: f.ID}
	prev, err := s.LoadMemory(ctx, key)
	if err != nil {
		report.Err = fmt.Errorf("%s: %s: %w", s.ID(), list, err)
		s.Report().AddWalk(report)
		return report.Err
	}
	if s.Ready(ctx) != nil {
		// A folder remembered by an account that could not be set up
		// (fetchFolders): its last membership again, nothing read. The
		// account's error is reported once, by the folder listing.
		emitMembers(s, f, prev, res)
		return nil
	}
	defer s.EnterBilling(ctx)()
	settings := s.Walk
	settings.RequestBudget = s.FolderWalkBudget()
	members := prev
	guard, err := startCapGuard(ctx, s, key, settings, prev)
	if err != nil {
		report.Result = notStarted(s, err)
	} else {
		w := &walk.Walker[client.FolderPost]{
			Settings: settings,
			Clock:    s.Clock,
			ID:       func(p client.FolderPost) string { return p.ID },
			Fetch: func(ctx context.Context, maxResults int, token string) (walk.Page[client.FolderPost], error) {
				page, _, err := s.API.GetFolder(ctx, s.UserID, f.ID, client.PageOptions{MaxResults: maxResults, PaginationToken: token})
				if err != nil {
					return walk.Page[client.FolderPost]{}, err
				}
				return walk.Page[client.FolderPost]{Items: page.Data, Next: page.Meta.NextToken}, nil
			},
		}
		if report.Result, err = w.Run(ctx, prev); err == nil {
			if err = s.SaveMemory(ctx, key, report.Result.Memory); err == nil {
				members = report.Result.Memory
			}
		}
		err = guard.done(ctx, settings, prev, report.Result, err)
	}
	if err != nil {
		report.Err = walkError(s, list, err)
	}
	s.Report().AddWalk(report)
	emitMembers(s, f, members, res)
	return errors.Join(report.Err, s.FlushWalk(ctx))
}

// emitMembers emits the membership a folder's memory holds (none when nil).
func emitMembers(s *account.Session, f *folder, members *walk.Memory, res chan<- any) {
	if members == nil {
		return
	}
	rows := make([]*folderPost, members.Held.Len())
	for i := range rows {
		rows[i] = &folderPost{userID: s.UserID, folderID: f.ID, postID: members.Held.At(i)}
	}
	if len(rows) > 0 {
		res <- rows
	}
}
