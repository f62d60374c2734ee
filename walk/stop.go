package walk

type seenKind int

const (
	seenNew seenKind = iota
	seenHeld
	seenDuplicate
)

// recentWindow is how many of the latest reads are checked for repeats. A
// repeat only happens when posts are bookmarked between two requests of a
// walk (the list shifts down), so it is one of the last page's posts; two
// full pages is ample, and keeps memory flat on million-post first syncs.
const recentWindow = 2 * APIMaxPage

// stopState follows a walk post by post and applies the stop rule.
type stopState struct {
	prev    *IDList
	pos     *Positions // nil when nothing is held
	confirm int

	order *IDList // distinct posts read, in list order
	read  int

	// The latest reads, for repeats: recent holds up to recentWindow ids,
	// older the window before it, so that the last recentWindow reads at
	// least are always checked, with no deletion per read.
	recent, older map[string]struct{}

	// The trailing run: the last runLen posts read are held, in strictly
	// increasing remembered position, the last at runLastPos.
	runStart, runLen, runLastPos int

	// aboveHeld are the remembered positions of held posts read before the
	// current run began (re-bookmarked posts, once the run is confirmed).
	aboveHeld []int
	runHeld   []int // remembered positions of the run's posts

	removed int
}

func newStopState(prev *Memory, confirmations int) *stopState {
	s := &stopState{confirm: confirmations, order: &IDList{}, recent: make(map[string]struct{}, recentWindow), older: make(map[string]struct{}, recentWindow)}
	if prev.held() > 0 {
		s.prev = prev.Held
		s.pos = prev.Held.Positions()
	}
	return s
}

func (s *stopState) add(id string) seenKind {
	if _, dup := s.recent[id]; dup {
		return seenDuplicate
	}
	if _, dup := s.older[id]; dup {
		return seenDuplicate
	}
	if len(s.recent) == recentWindow {
		clear(s.older)
		s.recent, s.older = s.older, s.recent
	}
	s.recent[id] = struct{}{}

	s.order.Append(id)
	s.read++
	if s.pos == nil {
		return seenNew
	}
	p, held := s.pos.Of(id)
	if !held {
		s.endRun()
		return seenNew
	}
	if s.runLen > 0 && p > s.runLastPos {
		s.runLen++
		s.runHeld = append(s.runHeld, p)
	} else {
		s.endRun()
		s.runStart, s.runLen = s.read-1, 1
		s.runHeld = append(s.runHeld[:0], p)
	}
	s.runLastPos = p
	return seenHeld
}

// endRun moves the current run's held posts above: they were not the tail.
func (s *stopState) endRun() {
	s.aboveHeld = append(s.aboveHeld, s.runHeld...)
	s.runHeld = s.runHeld[:0]
	s.runLen = 0
}

// confirmed reports whether the posts read end with a confirmed tail head.
func (s *stopState) confirmed() bool {
	return s.pos != nil && s.runLen >= 1+s.confirm
}

// minNeeded is the fewest posts the walk can still need before it may stop.
func (s *stopState) minNeeded() int {
	if s.pos == nil {
		return 1
	}
	return 1 + s.confirm - s.runLen
}

// found is the number of distinct posts above the head of the tail.
func (s *stopState) found(o Outcome) int {
	if s.runLen > 0 && (o == MetHeld || o == ReachedEnd) {
		return s.runStart
	}
	return s.read
}

func (s *stopState) rebookmarked(o Outcome) int {
	if o == MetHeld || o == ReachedEnd {
		return len(s.aboveHeld)
	}
	return len(s.aboveHeld) + len(s.runHeld)
}

// memory builds the list to remember after a clean walk.
func (s *stopState) memory(o Outcome) *Memory {
	if o != MetHeld || s.pos == nil {
		// The walk read the whole list: what it read is the list.
		if s.prev != nil {
			heldRead := len(s.aboveHeld) + len(s.runHeld)
			s.removed = s.prev.Len() - heldRead
		}
		return &Memory{Held: s.order}
	}
	// Everything read, then the remembered tail after the run, without the
	// posts that moved above it.
	moved := make(map[int]struct{}, len(s.aboveHeld))
	passed := 0 // moved posts remembered at or above the run's last post
	for _, p := range s.aboveHeld {
		moved[p] = struct{}{}
		if p <= s.runLastPos {
			passed++
		}
	}
	// Every remembered post at or above the run's last one was read (in the
	// run or above it) or is gone.
	s.removed = s.runLastPos + 1 - s.runLen - passed

	held := s.order
	for i := s.runLastPos + 1; i < s.prev.Len(); i++ {
		if _, ok := moved[i]; !ok {
			held.appendFrom(s.prev, i)
		}
	}
	return &Memory{Held: held}
}
