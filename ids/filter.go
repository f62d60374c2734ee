package ids

// filter is a split-block Bloom filter, as Parquet's: an id sets one bit in
// each of the eight 32-bit words of one block of 32 bytes, so that an
// answer reads one cache line. At about 12 bits an id, one new id in a
// hundred or so is sent on to the search.
type filter [][8]uint32

// salt spreads an id's bits over the words of its block (Parquet's).
var salt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

func newFilter(n int) filter { return make(filter, max(1, (n*12+255)/256)) }

func (f filter) block(n uint64) (*[8]uint32, uint32) {
	h := mix(n)
	return &f[((h>>32)*uint64(len(f)))>>32], uint32(h)
}

func (f filter) insert(n uint64) {
	b, h := f.block(n)
	for i, s := range salt {
		b[i] |= 1 << ((h * s) >> 27)
	}
}

func (f filter) check(n uint64) bool {
	b, h := f.block(n)
	for i, s := range salt {
		if b[i]&(1<<((h*s)>>27)) == 0 {
			return false
		}
	}
	return true
}

// mix is a 64-bit hash of n (SplitMix64's finalizer).
func mix(n uint64) uint64 {
	n ^= n >> 30
	n *= 0xbf58476d1ce4e5b9
	n ^= n >> 27
	n *= 0x94d049bb133111eb
	return n ^ n>>31
}
