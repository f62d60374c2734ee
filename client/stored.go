package client

import (
	"encoding/json"
	"fmt"
)

// storedPage is a bookmarks page as StoredPage writes it: X's own shape.
type storedPage struct {
	Data     []json.RawMessage `json:"data"`
	Includes Includes          `json:"includes"`
	Errors   []json.RawMessage `json:"errors,omitempty"`
	Meta     struct {
		ResultCount int `json:"result_count"`
	} `json:"meta"`
}

// StoredPage is the JSON of page as X returned it, with only the posts
// keep selects: what a sync sent, kept to send again. ParseStoredPage reads
// it back into the same posts and expanded objects.
func StoredPage(page *PostPage, keep func(i int) bool) ([]byte, error) {
	s := storedPage{Includes: page.Includes}
	for i := range page.Data {
		if keep(i) {
			s.Data = append(s.Data, page.Data[i].Raw)
		}
	}
	for _, pe := range page.Errors {
		s.Errors = append(s.Errors, pe.Raw)
	}
	s.Meta.ResultCount = len(s.Data)
	return json.Marshal(s)
}

// ParseStoredPage decodes what StoredPage wrote, with the checks of a page
// read from X.
func ParseStoredPage(body []byte) (*PostPage, error) {
	page, _, err := decodePostPage(body)
	if err != nil {
		return nil, fmt.Errorf("a stored bookmarks page: %w", err)
	}
	return page, nil
}
