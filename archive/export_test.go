package archive

// Files counts the files of table the snapshot reads.
func (s *Snapshot) Files(table string) int {
	if t := s.tables[table]; t != nil {
		return len(t.names)
	}
	return 0
}
