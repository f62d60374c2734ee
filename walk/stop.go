package walk

// stopState follows a walk post by post and applies the stop rule
// (docs/walk.md#the-stop-rule).
type stopState struct {
	prev    *IDList
	pos     func(id string) (int, bool) // the remembered positions; nil when nothing is held
	confirm int

	order *IDList // distinct posts read, in list order
	read  int

	// run holds the remembered positions of the trailing run: the last
	// posts read, all held, in strictly increasing remembered position. Its
	// first post was read after runStart others.
	run      []int
	runStart int
	// streak is how many of the run's last posts are at consecutive
	// remembered positions; block is set once confirm+1 of them were.
	streak int
	block  bool
	// confirmedAt is the number of posts read when the run met the rule (0
	// while it has not). A run that has met it stays confirmed while it goes
	// on: later posts in increasing order are what the tail would show.
	confirmedAt int

	// above counts the held posts read before the run (moved above the
	// tail, if the run is its head), and aboveUpTo their positions.
	above     int
	aboveUpTo fenwick

	removed int
}

func newStopState(prev *Memory, confirmations int) *stopState {
	s := &stopState{confirm: confirmations, order: &IDList{}}
	if prev.held() > 0 {
		s.prev = prev.Held
		s.pos = prev.Held.Positions()
	}
	return s
}

// add follows the walk to a post it reads for the first time (loopCheck
// tells the repeats), and reports whether the post is new: not held.
func (s *stopState) add(id string) bool {
	s.order.Append(id)
	s.read++
	if s.pos == nil {
		return true
	}
	p, held := s.pos(id)
	if !held {
		s.endRun()
		return true
	}
	if n := len(s.run); n > 0 && p > s.run[n-1] {
		if p == s.run[n-1]+1 {
			s.streak++
		} else {
			s.streak = 1
		}
		s.run = append(s.run, p)
	} else {
		s.endRun()
		s.runStart, s.run, s.streak = s.read-1, append(s.run, p), 1
	}
	if s.streak >= 1+s.confirm {
		s.block = true
	}
	if s.confirmedAt == 0 && s.block && len(s.run) >= 1+s.confirm+s.skipped() {
		s.confirmedAt = s.read
	}
	return false
}

// endRun moves the current run's held posts above: they were not the tail.
func (s *stopState) endRun() {
	for _, p := range s.run {
		s.aboveUpTo.add(p, s.prev.Len())
	}
	s.above += len(s.run)
	s.run = s.run[:0]
	s.streak, s.block, s.confirmedAt = 0, false, 0
}

// skipped is the number of remembered posts at or above the run's last one
// that the walk has not read. If the run is the head of the tail, each of
// them was removed since the last sync.
func (s *stopState) skipped() int {
	last := s.run[len(s.run)-1]
	return max(last+1-len(s.run)-s.aboveUpTo.sum(last), 0)
}

// confirmed reports whether the posts read end with the head of the tail,
// as far as order can tell.
func (s *stopState) confirmed() bool { return s.confirmedAt > 0 }

// minNeeded is the fewest posts the walk can still need before it may stop:
// what the run needs if it goes on as well as it can, or, if the next post
// starts a run afresh at the newest remembered post not read, 1+confirm.
func (s *stopState) minNeeded() int {
	if s.pos == nil {
		return 1
	}
	if len(s.run) == 0 {
		return 1 + s.confirm
	}
	need := 1 + s.confirm + s.skipped() - len(s.run)
	if !s.block {
		need = max(need, 1+s.confirm-s.streak)
	}
	return max(min(need, 1+s.confirm), 1)
}

// needed is the number of posts the stop rule needed: those read up to the
// one that completed the run, or all of them when the walk reached the end.
func (s *stopState) needed(o Outcome) int {
	if o == MetHeld {
		return s.confirmedAt
	}
	return s.read
}

// found is the number of distinct posts above the head of the tail.
func (s *stopState) found() int {
	if len(s.run) > 0 {
		return s.runStart
	}
	return s.read
}

// memory builds the list to remember after a clean walk.
func (s *stopState) memory(o Outcome) *Memory {
	if o != MetHeld || s.pos == nil {
		// The walk read the whole list: what it read is the list.
		if s.prev != nil {
			s.removed = s.prev.Len() - s.above - len(s.run)
		}
		return &Memory{Held: s.order}
	}
	// Everything read, then the remembered tail after the run, without the
	// posts that moved above it. Every remembered post at or above the
	// run's last one was read (in the run or above it) or is gone.
	last := s.run[len(s.run)-1]
	s.removed = s.skipped()
	held := s.order
	for i := last + 1; i < s.prev.Len(); i++ {
		if s.aboveUpTo.sum(i) == s.aboveUpTo.sum(i-1) { // i did not move above
			held.appendFrom(s.prev, i)
		}
	}
	return &Memory{Held: held}
}

// fenwick counts positions, "how many at or before p" in O(log n), for a
// walk that reads many held posts out of order (a user who re-saved
// thousands); most walks read none, and never allocate its tree.
type fenwick []int32

// add counts position p of a list of n.
func (f *fenwick) add(p, n int) {
	if *f == nil {
		*f = make(fenwick, n+1)
	}
	for i := p + 1; i < len(*f); i += i & -i {
		(*f)[i]++
	}
}

// sum is the number of positions added at or before p.
func (f fenwick) sum(p int) int {
	n := 0
	for i := min(p+1, len(f)-1); i > 0; i -= i & -i {
		n += int(f[i])
	}
	return n
}
