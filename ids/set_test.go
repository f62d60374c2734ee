package ids

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The set holds every id added, and only those, across its merges.
func TestASetHoldsEachIDOnce(t *testing.T) {
	var s Set
	want := map[string]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50_000 {
		id := strconv.FormatUint(rng.Uint64N(40_000), 10)
		if got := s.Add(id); got == want[id] {
			t.Fatalf("Add(%s) = %v, but it was in the set: %v", id, got, want[id])
		}
		want[id] = true
	}
	if !slices.IsSorted(s.added) || s.Len() != len(want) {
		t.Fatalf("%d sorted + %d latest, want %d", len(s.added), len(s.latest), len(want))
	}
}

// Only an id whose number prints back as the id is kept as a number: "7",
// "007", "+7", "abc" and a number past uint64 are five ids, each once.
func TestIDsThatAreNotPlainNumbersAreKeptAsTheyCame(t *testing.T) {
	var s Set
	ids := []string{"7", "007", "+7", "abc", "18446744073709551616", "7", "abc", "007"}
	added := 0
	for _, id := range ids {
		if s.Add(id) {
			added++
		}
	}
	want := []string{"7", "+7", "007", "18446744073709551616", "abc"}
	if got := s.IDs(); added != 5 || !slices.Equal(got, want) {
		t.Errorf("%d added, ids %q; want 5, %q", added, got, want)
	}
}

// A set that has merged its latest additions keeps them in its sorted
// slice alone: no map sized for them stays behind (a day's ledger of every
// account is kept until the sync ends).
func TestAMergedSetKeepsNoMap(t *testing.T) {
	var s Set
	for i := range minMerge {
		s.Add(strconv.Itoa(1_000_000 + i))
	}
	if s.latest != nil || len(s.added) != minMerge {
		t.Errorf("after a merge: %d sorted, latest map %v", len(s.added), s.latest != nil)
	}
}

// Has tells the ids of the set, merged or not, numbers or not; a clone
// holds the same ids and changes apart from the set.
func TestHasAndClone(t *testing.T) {
	var s Set
	for i := range 3000 {
		s.Add(strconv.Itoa(2 * i))
	}
	s.Add("abc")
	c := s.Clone()
	c.Add("1")
	for _, id := range []string{"0", "5998", "abc"} {
		if !s.Has(id) || !c.Has(id) {
			t.Errorf("%s not held", id)
		}
	}
	for _, id := range []string{"1", "5999", "ab", "007"} {
		if s.Has(id) {
			t.Errorf("%s held", id)
		}
	}
	if !c.Has("1") || c.Len() != s.Len()+1 {
		t.Errorf("clone: has 1 %v, %d ids for %d", c.Has("1"), c.Len(), s.Len())
	}
}

// Sets of a few hundred ids, as most accounts' ledgers of the day are, keep
// them in about 8 bytes each, not in a map.
func TestSmallSetsCostAboutEightBytesAnID(t *testing.T) {
	const sets, perSet = 1000, 300
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	all := make([]Set, sets)
	for i := range all {
		for j := range perSet {
			all[i].Add(strconv.Itoa(1_700_000_000_000_000_000 + i*perSet + j))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if perID := float64(after.HeapAlloc-before.HeapAlloc) / (sets * perSet); perID > 12 {
		t.Errorf("%.1f bytes an id held", perID)
	}
	runtime.KeepAlive(all)
}

// A set of 10,000 numbers and a few other ids encodes in a few bytes an
// id, and reads back the same.
func TestASetEncodesInAFewBytesAnID(t *testing.T) {
	var s Set
	for i := 0; i < 10000; i++ {
		s.Add(strconv.FormatUint(1_500_000_000_000_000_000+uint64(i)*7919, 10))
	}
	for _, odd := range []string{"abc", "007", "18446744073709551616", ""} { // not canonical uint64s
		s.Add(odd)
	}
	s.Add("1500000000000000000") // a repeat
	b, err := json.Marshal(map[string]*Set{"1001": &s})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 10000*3 {
		t.Errorf("10000 ids take %d bytes", len(b))
	}
	var back map[string]*Set
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, want := back["1001"].IDs(), s.IDs()
	if !slices.Equal(got, want) || len(got) != 10004 {
		t.Errorf("round trip: %d ids, want %d", len(got), len(want))
	}
	if !back["1001"].Has("18446744073709551616") || !back["1001"].Has("1500000000000079190") || back["1001"].Has("7") {
		t.Error("membership after the round trip")
	}
	var bad Set
	if err := bad.UnmarshalText([]byte("not base64!")); err == nil {
		t.Error("garbage accepted")
	}
}

// Add reports whether the id was new: the exporter's check that no
// (user_id, post_id) is written twice. "7" and "007" are different ids.
func TestAddReportsOnlyNewIDs(t *testing.T) {
	var s Set
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"7", true}, {"7", false}, {"007", true}, {"007", false}, {"0", true}, {"0", false},
		{"18446744073709551615", true}, {"18446744073709551616", true}, {"18446744073709551616", false},
		{"abc", true}, {"abc", false}, {"+7", true}, {"", true}, {"", false},
	} {
		if got := s.Add(c.id); got != c.want {
			t.Fatalf("Add(%q) = %v, want %v", c.id, got, c.want)
		}
	}
	for i := range 3*filterAfter + 10 { // across merges and the filter's making
		if !s.Add(strconv.Itoa(1_000_000 + i)) {
			t.Fatalf("id %d reported as held", 1_000_000+i)
		}
	}
	if s.Add("1000005") || !s.Has("007") || !s.Has("abc") || s.Len() != 8+3*filterAfter+10 {
		t.Fatalf("after merges: len %d", s.Len())
	}
}

// Each encoding holds every id added before it, numeric or not.
func TestEncodingFollowsAdds(t *testing.T) {
	var s Set
	s.Add("100")
	decode := func() []string {
		t.Helper()
		text, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Set
		if err := back.UnmarshalText(text); err != nil {
			t.Fatal(err)
		}
		return back.IDs()
	}
	if got := decode(); !slices.Equal(got, []string{"100"}) {
		t.Fatalf("first encoding: %v", got)
	}
	s.Add("200")
	if got := decode(); !slices.Equal(got, []string{"100", "200"}) {
		t.Errorf("after adding a number: %v", got)
	}
	s.Add("x-1")
	if got := decode(); !slices.Equal(got, []string{"100", "200", "x-1"}) {
		t.Errorf("after adding a string: %v", got)
	}
}

// Once a set has been asked about many ids it answers through a filter
// first; the answers stay exact: every held id is found (decoded, added
// before the filter was made, or after), every new one reported new, across
// the filter's growth.
func TestAddFindsHeldIDsThroughItsFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	id := func() uint64 { return 1_500_000_000_000_000_000 + rng.Uint64N(400_000_000_000_000_000) }
	var decoded Set
	held := map[uint64]bool{}
	for range 100_000 {
		n := id()
		decoded.Add(strconv.FormatUint(n, 10))
		held[n] = true
	}
	text, err := decoded.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var s Set
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
		if i%3 == 0 { // a held id: decoded, or added earlier in this loop
			n = heldList[rng.IntN(len(heldList))]
		}
		if got, want := s.Add(strconv.FormatUint(n, 10)), !held[n]; got != want {
			t.Fatalf("call %d: Add(%d) = %v, want %v ", i, n, got, want)
		}
		if !held[n] {
			held[n] = true
			heldList = append(heldList, n)
		}
	}
	if s.filter == nil || s.inFilter < len(held) {
		t.Fatalf("filter for %d numbers, %d held", s.inFilter, len(held))
	}
	if s.Len() != len(held) {
		t.Fatalf("%d ids, want %d", s.Len(), len(held))
	}
}

// BenchmarkAdd adds the ids of a first export, as the exporter's write
// does: snowflake ids in bookmark order (not id order).
func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchmarkAdd(b, n) })
	}
}

func benchmarkAdd(b *testing.B, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.FormatUint(1_500_000_000_000_000_000+rng.Uint64N(400_000_000_000_000_000), 10)
	}
	b.ReportAllocs()
	for b.Loop() {
		var s Set
		for _, id := range ids {
			if !s.Add(id) {
				b.Fatal("duplicate")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/id")
}

// A set whose ids are not sorted and unique, as MarshalText writes them, is
// damaged: binary search would miss ids in it, and a post would be written
// twice.
func TestASetRefusesIDsOutOfOrder(t *testing.T) {
	set := func(nums []uint64, strs []string) []byte {
		raw := []byte{sortedFormat}
		raw = binary.AppendUvarint(raw, uint64(len(nums)))
		for _, d := range nums { // as deltas
			raw = binary.AppendUvarint(raw, d)
		}
		raw = binary.AppendUvarint(raw, uint64(len(strs)))
		text, err := Pack(AppendStrings(raw, strs))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	var good Set
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
		var s Set
		if err := s.UnmarshalText(text); err == nil || err.Error() != "id set: damaged" {
			t.Errorf("%s: got %v, want the set refused as damaged", name, err)
		}
	}
}

// An export of many accounts adds a few hundred ids to each account's set.
// They cost about what the sorted lists cost (8 bytes an id), not a map
// each.
func TestManySetsOfAFewHundredIDsCostAboutEightBytesAnID(t *testing.T) {
	const sets, perSet = 1000, 500
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	all := make([]Set, sets)
	for i := range all {
		for j := range perSet {
			if !all[i].Add(strconv.Itoa(1_700_000_000_000_000_000 + i*perSet + j)) {
				t.Fatal("a new id reported as held")
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if perID := float64(after.HeapAlloc-before.HeapAlloc) / (sets * perSet); perID > 16 {
		t.Errorf("%.1f bytes an id held", perID)
	}
	if all[7].Add(strconv.Itoa(1_700_000_000_000_000_000+7*perSet+3)) || all[7].Len() != perSet {
		t.Error("an id added before was not found after the set merged")
	}
	runtime.KeepAlive(all)
}

// A set's filter is sized for the ids it holds, not for a full round of
// additions: a few thousand accounts of a few thousand posts each get one.
func TestTheFilterIsSizedForItsIDs(t *testing.T) {
	var s Set
	for i := range filterAfter {
		s.Add(strconv.Itoa(1_700_000_000_000_000_000 + i))
	}
	if s.filter == nil {
		t.Fatal("no filter after filterAfter new ids")
	}
	if size := len(s.filter) * 32; size > 16<<10 {
		t.Errorf("the filter of %d ids takes %d bytes", filterAfter, size)
	}
}

// A set tells the ids it was decoded with (an earlier run's) from those
// added since, merged or not, until it is decoded again: the run needs no second
// set of the bookmarks it wrote to know which content rows an earlier run
// did.
func TestASetTellsTheIDsItWasDecodedWith(t *testing.T) {
	var began Set
	for i := range 100 {
		began.Add(strconv.Itoa(1_000 + i))
	}
	text, err := began.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	var s Set
	if err := s.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * filterAfter {
		if !s.Add(strconv.Itoa(1_000_000 + i)) {
			t.Fatal("a new id reported as held")
		}
	}
	if !s.HasEarlier("1050") || s.HasEarlier("1000007") || !s.Has("1000007") || s.Add("1050") {
		t.Errorf("earlier 1050 %v, earlier 1000007 %v, has 1000007 %v", s.HasEarlier("1050"), s.HasEarlier("1000007"), s.Has("1000007"))
	}
	text, err = s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 100+3*filterAfter || !s.HasEarlier("1000007") {
		t.Errorf("settled: %d ids, earlier 1000007 %v", s.Len(), s.HasEarlier("1000007"))
	}
}

// FuzzSetDecode decodes sets from any bytes, packed as the state packs them
// (so that the fuzzer reaches the decoder past gzip's CRC). A set that
// decodes holds sorted, unique, canonical ids and encodes back to the same
// set.
func FuzzSetDecode(f *testing.F) {
	for _, ids := range [][]string{nil, {"1800000000000000000", "5", "18446744073709551615"}, {"007", "x", ""}} {
		s := &Set{}
		for _, id := range ids {
			s.Add(id)
		}
		text, err := s.MarshalText()
		if err != nil {
			f.Fatal(err)
		}
		raw, err := Unpack(text, "seed")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		text, err := Pack(raw)
		if err != nil {
			t.Fatal(err)
		}
		var s Set
		if err := s.UnmarshalText(text); err != nil {
			return
		}
		ids := s.IDs()
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] || !s.Has(id) || s.Add(id) {
				t.Fatalf("id %q: repeated, or not held", id)
			}
			seen[id] = true
		}
		again, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Set
		if err := back.UnmarshalText(again); err != nil || !reflect.DeepEqual(back.IDs(), ids) {
			t.Fatalf("a decoded set reads back as %v (%v); want %v", back.IDs(), err, ids)
		}
	})
}

// A sorted list encodes as the compliance state has always stored it, and
// refuses what is not one.
func TestSortedRoundTrip(t *testing.T) {
	p := NewSorted([]uint64{9, 3, 1 << 60, 3})
	text, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalSorted(text, "state \"k\"")
	if err != nil || !slices.Equal(back, Sorted{3, 9, 1 << 60}) {
		t.Fatalf("round trip: %v (%v)", back, err)
	}
	if !back.Has(9) || back.Has(4) || !slices.Equal(back.Union(Sorted{4, 9}), Sorted{3, 4, 9, 1 << 60}) {
		t.Error("Has or Union")
	}
	damaged := []byte(text)
	damaged[len(damaged)/2] ^= 1
	if _, err := UnmarshalSorted(string(damaged), "ids"); err == nil {
		t.Error("a damaged list was read")
	}
	if _, err := UnmarshalSorted("not base64!", "state \"k\""); err == nil || !strings.HasPrefix(err.Error(), "state \"k\"") {
		t.Errorf("garbage: %v", err)
	}
}

// Parse takes only what prints back as the same id.
func TestParseTakesOnlyCanonicalNumbers(t *testing.T) {
	for id, want := range map[string]bool{"7": true, "0": true, "18446744073709551615": true,
		"007": false, "+7": false, "-7": false, "7_0": false, "": false, "18446744073709551616": false, " 7": false, "abc": false} {
		if _, ok := Parse(id); ok != want {
			t.Errorf("Parse(%q) = %v", id, ok)
		}
	}
}
