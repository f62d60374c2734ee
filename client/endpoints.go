package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Me resolves the user behind the token: GET /2/users/me. Its budget and
// meter rows are kept under the user ID "" (the user is not known before it
// answers).
func (c *Client) Me(ctx context.Context) (*User, *Response, error) {
	var u *User
	resp, err := c.do(ctx, &call{
		op: OpUsersMe, method: http.MethodGet, path: "/2/users/me",
		decode: func(b []byte) (Resources, error) {
			var err error
			if u, err = decodeUser(b); err != nil {
				return Resources{}, err
			}
			return Resources{Users: []string{u.ID}}, nil
		},
	})
	if err != nil {
		return nil, resp, err
	}
	return u, resp, nil
}

// ListBookmarks reads one page of the user's bookmarks, newest-bookmarked
// first: GET /2/users/:id/bookmarks. The next page is asked for with
// opts.PaginationToken = page.Meta.NextToken; a page without a NextToken is
// the last. A 200 may carry partial errors in page.Errors beside the data.
func (c *Client) ListBookmarks(ctx context.Context, userID string, opts ListOptions) (*PostPage, *Response, error) {
	const op = OpListBookmarks
	if err := validID(op, "user id", userID); err != nil {
		return nil, nil, err
	}
	if err := validPage(op, opts.PageOptions, c.tokenCheck); err != nil {
		return nil, nil, err
	}
	if err := validFields(op, opts.Fields); err != nil {
		return nil, nil, err
	}
	q := pageQuery(opts.PageOptions)
	addList(q, "tweet.fields", opts.Fields.TweetFields)
	addList(q, "expansions", opts.Fields.Expansions)
	addList(q, "user.fields", opts.Fields.UserFields)
	addList(q, "media.fields", opts.Fields.MediaFields)
	addList(q, "poll.fields", opts.Fields.PollFields)
	addList(q, "place.fields", opts.Fields.PlaceFields)
	var page *PostPage
	resp, err := c.do(ctx, &call{
		op: op, user: userID, method: http.MethodGet,
		path: "/2/users/" + userID + "/bookmarks", query: q, pageSize: opts.MaxResults,
		decode: func(b []byte) (Resources, error) {
			var err error
			var res Resources
			page, res, err = decodePostPage(b)
			return res, err
		},
	})
	if err != nil {
		return nil, resp, err
	}
	return page, resp, nil
}

// ListFolders reads one page of the user's bookmark folders:
// GET /2/users/:id/bookmarks/folders.
func (c *Client) ListFolders(ctx context.Context, userID string, opts PageOptions) (*FolderPage, *Response, error) {
	const op = OpListFolders
	if err := validID(op, "user id", userID); err != nil {
		return nil, nil, err
	}
	if err := validPage(op, opts, c.tokenCheck); err != nil {
		return nil, nil, err
	}
	var page *FolderPage
	resp, err := c.do(ctx, &call{
		op: op, user: userID, method: http.MethodGet,
		path: "/2/users/" + userID + "/bookmarks/folders", query: pageQuery(opts), pageSize: opts.MaxResults,
		decode: func(b []byte) (Resources, error) {
			var err error
			page, err = decodeFolderPage(b)
			return Resources{}, err
		},
	})
	if err != nil {
		return nil, resp, err
	}
	return page, resp, nil
}

// GetFolder reads one page of the post ids in a bookmark folder:
// GET /2/users/:id/bookmarks/folders/:folder_id. Only ids are returned.
func (c *Client) GetFolder(ctx context.Context, userID, folderID string, opts PageOptions) (*FolderPostsPage, *Response, error) {
	const op = OpGetFolder
	if err := validID(op, "user id", userID); err != nil {
		return nil, nil, err
	}
	if err := validID(op, "folder id", folderID); err != nil {
		return nil, nil, err
	}
	if err := validPage(op, opts, c.tokenCheck); err != nil {
		return nil, nil, err
	}
	var page *FolderPostsPage
	resp, err := c.do(ctx, &call{
		op: op, user: userID, method: http.MethodGet,
		path: "/2/users/" + userID + "/bookmarks/folders/" + folderID, query: pageQuery(opts), pageSize: opts.MaxResults,
		decode: func(b []byte) (Resources, error) {
			var err error
			page, err = decodeFolderPostsPage(b)
			return page.resources(), err // a refused page's posts were billed too
		},
	})
	if err != nil {
		return nil, resp, err
	}
	return page, resp, nil
}

// AddBookmark bookmarks a post: POST /2/users/:id/bookmarks with
// {"tweet_id":"..."}. It returns data.bookmarked (true on success). Needs
// the bookmark.write scope.
func (c *Client) AddBookmark(ctx context.Context, userID, postID string) (bool, *Response, error) {
	const op = OpAddBookmark
	if err := validID(op, "user id", userID); err != nil {
		return false, nil, err
	}
	if err := validID(op, "post id", postID); err != nil {
		return false, nil, err
	}
	var bookmarked bool
	resp, err := c.do(ctx, &call{
		op: op, user: userID, method: http.MethodPost,
		path: "/2/users/" + userID + "/bookmarks",
		body: []byte(`{"tweet_id":"` + postID + `"}`),
		decode: func(b []byte) (Resources, error) {
			var err error
			bookmarked, err = decodeBookmarked(b)
			return Resources{}, err
		},
	})
	if err != nil {
		return false, resp, err
	}
	return bookmarked, resp, nil
}

// RemoveBookmark removes a bookmark: DELETE /2/users/:id/bookmarks/:tweet_id.
// It returns data.bookmarked (false on success). Needs the bookmark.write scope.
func (c *Client) RemoveBookmark(ctx context.Context, userID, postID string) (bool, *Response, error) {
	const op = OpRemoveBookmark
	if err := validID(op, "user id", userID); err != nil {
		return false, nil, err
	}
	if err := validID(op, "post id", postID); err != nil {
		return false, nil, err
	}
	var bookmarked bool
	resp, err := c.do(ctx, &call{
		op: op, user: userID, method: http.MethodDelete,
		path: "/2/users/" + userID + "/bookmarks/" + postID,
		decode: func(b []byte) (Resources, error) {
			var err error
			bookmarked, err = decodeBookmarked(b)
			return Resources{}, err
		},
	})
	if err != nil {
		return false, resp, err
	}
	return bookmarked, resp, nil
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

func addList(q url.Values, key string, v []string) {
	if len(v) > 0 {
		q.Set(key, strings.Join(v, ","))
	}
}
