package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cq-source-x/cq-source-x/client"
)

// Walk the bookmarks from the top until a post already held (the
// high-water mark) or the last page, as the interface document's client
// rules ask: no pagination token is kept between runs.
func ExampleClient_ListBookmarks() {
	ctx := context.Background()
	c, err := client.New(client.StaticToken("user-context-access-token"))
	if err != nil {
		log.Fatal(err)
	}
	me, _, err := c.Me(ctx)
	if err != nil {
		log.Fatal(err)
	}
	highWater := "1880000000000000000" // newest post id stored by the last run
	opts := client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: 100},
		Fields:      client.Fields{TweetFields: []string{"created_at", "author_id"}, Expansions: []string{"author_id"}},
	}
walk:
	for {
		page, resp, err := c.ListBookmarks(ctx, me.ID, opts)
		switch {
		case errors.Is(err, client.ErrAppOnlyToken), errors.Is(err, client.ErrUnauthorized):
			log.Fatal(err) // the message carries the hint: run `cq-source-x login`
		case errors.Is(err, client.ErrCreditsDepleted):
			log.Fatal(err) // terminal: never retried
		case errors.Is(err, client.ErrRateLimited):
			var rle *client.RateLimitError
			errors.As(err, &rle)
			log.Printf("stopping until %s", rle.Rate.Reset)
			break walk
		case err != nil:
			log.Fatal(err)
		}
		fmt.Println(resp.PostsReturned, "posts billed")
		for _, p := range page.Data {
			if p.ID == highWater {
				break walk
			}
			_ = p.Raw // store the post as returned
		}
		if page.Meta.NextToken == "" {
			break
		}
		opts.PaginationToken = page.Meta.NextToken
	}
	fmt.Printf("%+v\n", c.Meter().Total())
}
