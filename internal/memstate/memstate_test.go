package memstate

import (
	"context"
	"testing"
)

// A value set is seen at once but committed only by a Flush, as the SDK's
// state client has it: the exporter commits what was flushed with a run's
// files, and nothing staged after.
func TestSetKeyIsStagedUntilFlush(t *testing.T) {
	ctx := context.Background()
	s := NewWith(map[string]string{"a": "1"})
	_ = s.SetKey(ctx, "a", "2")
	_ = s.SetKey(ctx, "b", "3")
	if v, _ := s.GetKey(ctx, "a"); v != "2" {
		t.Errorf("a staged value is not seen: %q", v)
	}
	if c := s.Committed(); c["a"] != "1" || c["b"] != "" {
		t.Errorf("committed before a flush: %v", c)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := s.Committed(); c["a"] != "2" || c["b"] != "3" || s.Flushes() != 1 {
		t.Errorf("after a flush: %v, %d flushes", c, s.Flushes())
	}
	if v, _ := s.GetKey(ctx, "never"); v != "" {
		t.Errorf("a key never set: %q", v)
	}
}

// The store holds a copy of what it starts from, and hands out copies: a
// caller's map never changes under it.
func TestTheStoreSharesNoMap(t *testing.T) {
	ctx := context.Background()
	start := map[string]string{"a": "1"}
	s := NewWith(start)
	_ = s.SetKey(ctx, "a", "2")
	_ = s.Flush(ctx)
	if start["a"] != "1" {
		t.Error("the map the store started from changed")
	}
	c := s.Committed()
	c["a"] = "x"
	if v, _ := s.GetKey(ctx, "a"); v != "2" {
		t.Errorf("a copy handed out changed the store: %q", v)
	}
}
