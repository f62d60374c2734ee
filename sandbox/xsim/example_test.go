package xsim_test

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

func Example() {
	clk := clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := xsim.New(xsim.Options{Clock: clk})
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()
	s.AddUser("42", "alice")
	newest := s.SeedBookmarks("42", 3)[0] // newest first
	token := s.IssueToken("42")           // tweet.read users.read bookmark.read bookmark.write

	req, _ := http.NewRequest("GET", s.URL()+"/2/users/42/bookmarks?max_results=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, res.Header.Get("x-rate-limit-remaining"), len(body) > 0, newest != "")
	fmt.Println(s.Usage("42")[xsim.OpListBookmarks].PostsReturned)
	// Output:
	// 200 179 true true
	// 1
}
