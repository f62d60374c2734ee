package export

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/cq-source-x/cq-source-x/internal/textpack"
)

func TestIDSet(t *testing.T) {
	var s idSet
	for i := 0; i < 10000; i++ {
		s.Add(strconv.FormatUint(1_500_000_000_000_000_000+uint64(i)*7919, 10))
	}
	for _, odd := range []string{"abc", "007", "18446744073709551616", ""} { // not canonical uint64s
		s.Add(odd)
	}
	s.Add("1500000000000000000") // a repeat
	if !s.Has("1500000000000007919") || !s.Has("007") || s.Has("7") || s.Has("1500000000000000001") {
		t.Error("membership before compacting")
	}
	b, err := json.Marshal(map[string]*idSet{"1001": &s})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 10000*3 {
		t.Errorf("10000 ids take %d bytes", len(b))
	}
	var back map[string]*idSet
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, want := back["1001"].IDs(), s.IDs()
	if !slices.Equal(got, want) || len(got) != 10004 {
		t.Errorf("round trip: %d ids, want %d", len(got), len(want))
	}
	if !back["1001"].Has("18446744073709551616") || !back["1001"].Has("1500000000000079190") {
		t.Error("membership after the round trip")
	}
	var bad idSet
	if err := bad.UnmarshalText([]byte("not base64!")); err == nil {
		t.Error("garbage accepted")
	}
}

// Sets larger than compactAt merge their additions into the sorted list as
// they go, and stay exact: every id found, none twice, in order.
func TestIDSetCompactsAsItGrows(t *testing.T) {
	var s idSet
	n := 3*compactAt + 17
	for i := n; i > 0; i-- {
		s.Add(strconv.Itoa(i * 3))
		if i%1000 == 0 {
			s.Add(strconv.Itoa(i * 3)) // repeats
		}
	}
	if len(s.addNums) >= compactAt {
		t.Fatalf("%d ids waiting in the map", len(s.addNums))
	}
	for _, i := range []int{1, compactAt, n} {
		if !s.Has(strconv.Itoa(i*3)) || s.Has(strconv.Itoa(i*3+1)) {
			t.Fatalf("membership of %d", i*3)
		}
	}
	ids := s.IDs()
	if len(ids) != n || !slices.IsSortedFunc(ids, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y }) {
		t.Fatalf("%d ids, want %d, sorted", len(ids), n)
	}
}

// AddNew is Add that reports whether the id was new: the exporter's check
// that no (user_id, post_id) is written twice. "7" and "007" are different
// ids (only canonical decimals are kept as numbers).
func TestIDSetAddNewReportsOnlyNewIDs(t *testing.T) {
	var s idSet
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"7", true}, {"7", false}, {"007", true}, {"007", false}, {"0", true}, {"0", false},
		{"18446744073709551615", true}, {"18446744073709551616", true}, {"18446744073709551616", false},
		{"abc", true}, {"abc", false}, {"+7", true}, {"", true}, {"", false},
	} {
		if got := s.AddNew(c.id); got != c.want {
			t.Fatalf("AddNew(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	for i := range compactAt + 10 { // across a compaction
		if !s.AddNew(strconv.Itoa(1_000_000 + i)) {
			t.Fatalf("id %d reported as held", 1_000_000+i)
		}
	}
	if s.AddNew("1000005") || !s.Has("007") || !s.Has("abc") || s.Len() != 8+compactAt+10 {
		t.Fatalf("after compaction: len %d", s.Len())
	}
}

// Each encoding holds every id added before it, numeric or not: the set is
// encoded after ids were added to it, and again after more.
func TestIDSetEncodingFollowsAdds(t *testing.T) {
	var s idSet
	s.Add("100")
	decode := func() []string {
		t.Helper()
		text, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back idSet
		if err := back.UnmarshalText(text); err != nil {
			t.Fatal(err)
		}
		return back.IDs()
	}
	if got := decode(); !slices.Equal(got, []string{"100"}) {
		t.Fatalf("first encoding: %v", got)
	}
	if !s.AddNew("200") {
		t.Fatal("200 is new")
	}
	if got := decode(); !slices.Equal(got, []string{"100", "200"}) {
		t.Errorf("after adding a number: %v", got)
	}
	s.Add("x-1")
	if got := decode(); !slices.Equal(got, []string{"100", "200", "x-1"}) {
		t.Errorf("after adding a string: %v", got)
	}
}

// Once a set has been asked about many ids it answers through a filter
// first; the answers stay exact: every held id is found (loaded, added
// before the filter was made, or after), every new one reported new, across
// the filter's growth.
func TestIDSetAddNewFindsHeldIDsThroughItsFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	id := func() uint64 { return 1_500_000_000_000_000_000 + rng.Uint64N(400_000_000_000_000_000) }
	var loaded idSet
	held := map[uint64]bool{}
	for range 100_000 {
		n := id()
		loaded.Add(strconv.FormatUint(n, 10))
		held[n] = true
	}
	text, err := loaded.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var s idSet
	if err := s.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	heldList := make([]uint64, 0, len(held))
	for n := range held {
		heldList = append(heldList, n)
	}
	slices.Sort(heldList)
	for i := range 400_000 {
		n := id()
		if i%3 == 0 { // a held id: loaded, or added earlier in this loop
			n = heldList[rng.IntN(len(heldList))]
		}
		if got, want := s.AddNew(strconv.FormatUint(n, 10)), !held[n]; got != want {
			t.Fatalf("call %d: AddNew(%d) = %v, want %v ", i, n, got, want)
		}
		if !held[n] {
			held[n] = true
			heldList = append(heldList, n)
		}
	}
	if s.filter == nil || s.inFilter < uint64(len(held)) {
		t.Fatalf("filter for %d numbers, %d held", s.inFilter, len(held))
	}
	if s.Len() != len(held) {
		t.Fatalf("%d ids, want %d", s.Len(), len(held))
	}
}

// BenchmarkIDSetAddNew adds the ids of a first export of 100,000 posts, as
// the exporter's write does: snowflake ids in bookmark order (not id order).
func BenchmarkIDSetAddNew(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchmarkIDSetAddNew(b, n) })
	}
}

func benchmarkIDSetAddNew(b *testing.B, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.FormatUint(1_500_000_000_000_000_000+rng.Uint64N(400_000_000_000_000_000), 10)
	}
	b.ReportAllocs()
	for b.Loop() {
		var s idSet
		for _, id := range ids {
			if !s.AddNew(id) {
				b.Fatal("duplicate")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/id")
}

// A written-id set whose ids are not sorted and unique, as MarshalText
// writes them, is damaged: binary search would miss ids in it, and a post
// would be written twice.
func TestIDSetRefusesIDsOutOfOrder(t *testing.T) {
	set := func(nums []uint64, strs []string) []byte {
		raw := []byte{idSetFormat}
		raw = binary.AppendUvarint(raw, uint64(len(nums)))
		for _, d := range nums { // as deltas
			raw = binary.AppendUvarint(raw, d)
		}
		raw = binary.AppendUvarint(raw, uint64(len(strs)))
		raw = textpack.AppendStrings(raw, strs)
		text, err := textpack.Pack(raw)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	var good idSet
	if err := good.UnmarshalText(set([]uint64{5, 1 << 62}, []string{"007", "abc"})); err != nil || good.Len() != 4 {
		t.Fatalf("a well-formed set: %v, %d ids", err, good.Len())
	}
	for name, text := range map[string][]byte{
		"a delta that wraps past 2^64": set([]uint64{1 << 63, 1<<63 + 5}, nil),
		"a repeated number":            set([]uint64{5, 0}, nil),
		"strings out of order":         set(nil, []string{"abc", "007"}),
		"a repeated string":            set(nil, []string{"abc", "abc"}),
		"a number kept as a string":    set(nil, []string{"1500000000000000000"}),
	} {
		var s idSet
		if err := s.UnmarshalText(text); err == nil || err.Error() != "written-id set: damaged" {
			t.Errorf("%s: got %v, want the set refused as damaged", name, err)
		}
	}
}

// An export of many accounts adds a few hundred ids to each account's set.
// They cost about what the sorted lists cost (8 bytes an id), not a map
// each: the ids waiting in maps are bounded across all accounts.
func TestWrittenIDsOfManyAccountsCostAboutEightBytesAnID(t *testing.T) {
	const accounts, perAccount = 1000, 500
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w := newWrittenIDs(nil)
	for a := range accounts {
		uid := strconv.Itoa(1_000_000 + a)
		for i := range perAccount {
			if !w.AddNew(uid, strconv.Itoa(1_700_000_000_000_000_000+a*perAccount+i)) {
				t.Fatal("a new id reported as written")
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perID := float64(after.HeapAlloc-before.HeapAlloc) / (accounts * perAccount)
	if perID > 16 {
		t.Errorf("%.1f bytes an id held", perID)
	}
	if w.AddNew("1000007", strconv.Itoa(1_700_000_000_000_000_000+7*perAccount+3)) || w.byUser["1000007"].Len() != perAccount {
		t.Error("an id written before was not found after the sets merged")
	}
	runtime.KeepAlive(w)
}

// A set's filter is sized for the ids it holds, not for a full round of
// additions: a few thousand accounts of a few thousand posts each get one.
func TestIDSetFilterIsSizedForItsIDs(t *testing.T) {
	var s idSet
	for i := range filterAfter {
		s.AddNew(strconv.Itoa(1_700_000_000_000_000_000 + i))
	}
	f, ok := s.filter.(interface{ Size() int64 })
	if !ok {
		t.Fatal("no filter after filterAfter new ids")
	}
	if f.Size() > 16<<10 {
		t.Errorf("the filter of %d ids takes %d bytes", filterAfter, f.Size())
	}
}

// A set tells the ids it began with (an earlier run's) from those added
// since, merged or not, until it is settled: the run needs no second set
// of the bookmarks it wrote to know which content rows an earlier run did.
func TestIDSetTellsTheIDsItBeganWith(t *testing.T) {
	var began idSet
	for i := range 100 {
		began.Add(strconv.Itoa(1_000 + i))
	}
	text, err := began.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var s idSet
	if err := s.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	for i := range 2 * compactAt {
		if !s.AddNew(strconv.Itoa(1_000_000 + i)) {
			t.Fatal("a new id reported as held")
		}
	}
	if !s.HasEarlier("1050") || s.HasEarlier("1000007") || !s.Has("1000007") || s.AddNew("1050") {
		t.Errorf("earlier 1050 %v, earlier 1000007 %v, has 1000007 %v", s.HasEarlier("1050"), s.HasEarlier("1000007"), s.Has("1000007"))
	}
	if s.Len() != 100+2*compactAt || !s.HasEarlier("1000007") {
		t.Errorf("settled: %d ids, earlier 1000007 %v", s.Len(), s.HasEarlier("1000007"))
	}
}
