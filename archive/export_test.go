package archive

import "github.com/cq-source-x/cq-source-x/account"

func isStateKey(key string) bool {
	_, ok := account.ParseKey(key)
	return ok
}

// Files counts the files of table the snapshot reads.
func (s *Snapshot) Files(table string) int {
	if t := s.tables[table]; t != nil {
		return len(t.names)
	}
	return 0
}
