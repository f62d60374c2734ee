package memstate

func (s *Store) Flushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}
