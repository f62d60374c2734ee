package client

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/cq-source-x/cq-source-x/billing"
)

// Me resolves the user behind the token: GET /2/users/me. Its budget and
// meter rows are under the user ID "" (the user is not known before).
func (c *Client) Me(ctx context.Context) (*User, *Response, error) {
	return send(ctx, c, &call{op: OpUsersMe, method: http.MethodGet, path: "/2/users/me"}, func(b []byte) (*User, billing.Billed, error) {
		u, err := decodeUser(b)
		if err != nil {
			return nil, billing.Billed{}, err
		}
		return u, billing.Billed{Users: []string{u.ID}}, nil
	})
}

// send does cl and returns what decode read of its 2xx body; decode also
// says what X billed for the body, refused or not.
func send[T any](ctx context.Context, c *Client, cl *call, decode func([]byte) (T, billing.Billed, error)) (T, *Response, error) {
	var v T
	cl.decode = func(b []byte) (res billing.Billed, err error) {
		v, res, err = decode(b)
		return res, err
	}
	resp, err := c.do(ctx, cl)
	if err != nil {
		var zero T
		return zero, resp, err
	}
	return v, resp, nil
}

// unbilled is decode for a body X bills nothing for.
func unbilled[T any](decode func([]byte) (T, error)) func([]byte) (T, billing.Billed, error) {
	return func(b []byte) (T, billing.Billed, error) {
		v, err := decode(b)
		return v, billing.Billed{}, err
	}
}

// ListBookmarks reads one page of the user's bookmarks, newest-bookmarked
// first: GET /2/users/:id/bookmarks. opts.Fields are asked for in the
// naming of the client's policy (resp.Naming); under auto, a 400 refusing
// the tweets naming switches the sync to the posts naming and the page is
// asked for again (a refused request bills nothing).
func (c *Client) ListBookmarks(ctx context.Context, userID string, opts ListOptions) (*PostPage, *Response, error) {
	const op = OpListBookmarks
	if err := cmp.Or(validID(op, "user id", userID), validPage(op, opts.PageOptions, c.tokenCheck), validFields(op, opts.Fields)); err != nil {
		return nil, nil, err
	}
	used := c.naming.Current()
	page, resp, err := c.listBookmarks(ctx, userID, opts, used)
	if again, first := c.naming.switchAfter(used, opts.Fields, err); again {
		if first {
			c.logSwitch(userID, opts.Fields, err)
		}
		page, resp, err = c.listBookmarks(ctx, userID, opts, NamingPosts)
	}
	return page, resp, err
}

func (c *Client) listBookmarks(ctx context.Context, userID string, opts ListOptions, n Naming) (*PostPage, *Response, error) {
	const op = OpListBookmarks
	q := pageQuery(opts.PageOptions)
	opts.Fields.query(q, n)
	page, resp, err := send(ctx, c, &call{op: op, user: userID, method: http.MethodGet,
		path: "/2/users/" + userID + "/bookmarks", query: q, pageSize: opts.MaxResults},
		func(b []byte) (*PostPage, billing.Billed, error) {
			page, res, err := decodePostPage(b)
			res.Owned = true // X's owned read: the bookmarks of the app's owner (Meter.SetOwnedReads)
			return page, res, err
		})
	resp.Naming = n // do always returns a Response
	return page, resp, err
}

// logSwitch says, once a sync, that X refused the tweets naming and what
// the posts naming does not ask for.
func (c *Client) logSwitch(userID string, f Fields, refused error) {
	_, dropped := f.In(NamingPosts)
	ev := c.log.Warn().Str("operation", string(OpListBookmarks)).Str("user_id", userID).
		Str("refused", oneLine(c.redactor.String(refused.Error()), 300))
	if len(dropped) > 0 {
		ev = ev.Strs("not_asked", dropped)
	}
	ev.Msg("x api: X refused a name of its API's tweets naming; asking in its posts naming (post.fields, referenced_posts, note_post, ...) " +
		"for the rest of this sync (api_naming: auto). That naming has no name for not_asked: author_id, in_reply_to_user_id and the " +
		"referenced posts come only as expansions, which X bills, so they are asked for only with content.authors and " +
		"content.referenced_posts, and their columns are filled only when X returns them. Set api_naming: posts to ask so from the start")
}

// ListFolders reads one page of folders: GET /2/users/:id/bookmarks/folders.
func (c *Client) ListFolders(ctx context.Context, userID string, opts PageOptions) (*FolderPage, *Response, error) {
	const op = OpListFolders
	if err := cmp.Or(validID(op, "user id", userID), validPage(op, opts, c.tokenCheck)); err != nil {
		return nil, nil, err
	}
	return send(ctx, c, &call{op: op, user: userID, method: http.MethodGet,
		path: "/2/users/" + userID + "/bookmarks/folders", query: pageQuery(opts), pageSize: opts.MaxResults},
		unbilled(decodeFolderPage))
}

// GetFolder reads one page of the post ids in a folder:
// GET /2/users/:id/bookmarks/folders/:folder_id.
func (c *Client) GetFolder(ctx context.Context, userID, folderID string, opts PageOptions) (*FolderPostsPage, *Response, error) {
	const op = OpGetFolder
	if err := cmp.Or(validID(op, "user id", userID), validID(op, "folder id", folderID), validPage(op, opts, c.tokenCheck)); err != nil {
		return nil, nil, err
	}
	return send(ctx, c, &call{op: op, user: userID, method: http.MethodGet,
		path: "/2/users/" + userID + "/bookmarks/folders/" + folderID, query: pageQuery(opts), pageSize: opts.MaxResults},
		func(b []byte) (*FolderPostsPage, billing.Billed, error) {
			page, err := decodeFolderPostsPage(b)
			return page, page.billed(), err // a refused page's posts were billed too
		})
}

// AddBookmark bookmarks a post: POST /2/users/:id/bookmarks. It returns
// data.bookmarked (true on success).
func (c *Client) AddBookmark(ctx context.Context, userID, postID string) (bool, *Response, error) {
	return c.changeBookmark(ctx, OpAddBookmark, http.MethodPost, userID, postID, "", []byte(`{"tweet_id":"`+postID+`"}`))
}

// RemoveBookmark removes a bookmark: DELETE /2/users/:id/bookmarks/:tweet_id.
// It returns data.bookmarked (false on success).
func (c *Client) RemoveBookmark(ctx context.Context, userID, postID string) (bool, *Response, error) {
	return c.changeBookmark(ctx, OpRemoveBookmark, http.MethodDelete, userID, postID, "/"+postID, nil)
}

// changeBookmark sends op's request for the bookmark of postID; X bills it
// when it answers with its data, whatever that says.
func (c *Client) changeBookmark(ctx context.Context, op Operation, method, userID, postID, pathTail string, body []byte) (bool, *Response, error) {
	if err := cmp.Or(validID(op, "user id", userID), validID(op, "post id", postID)); err != nil {
		return false, nil, err
	}
	return send(ctx, c, &call{op: op, user: userID, method: method, path: "/2/users/" + userID + "/bookmarks" + pathTail, body: body},
		func(b []byte) (bool, billing.Billed, error) {
			bookmarked, err := decodeBookmarked(b)
			return bookmarked, billing.Billed{Writes: 1}, err
		})
}

func pageQuery(o PageOptions) url.Values {
	q := url.Values{}
	if o.MaxResults > 0 {
		q.Set("max_results", strconv.Itoa(o.MaxResults))
	}
	if o.PaginationToken != "" {
		q.Set("pagination_token", o.PaginationToken)
	}
	return q
}
