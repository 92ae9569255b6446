package merge

import (
	"math/rand/v2"
	"testing"
)

// TestHasStrSpecial checks the eight-bytes-at-a-time test against the table
// it stands for: every byte value in every position, among plain bytes and
// among random ones.
func TestHasStrSpecial(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for round := 0; round < 2000; round++ {
		var b [8]byte
		for k := range b {
			if round%2 == 0 {
				b[k] = byte(0x20 + r.IntN(0x60)) // mostly plain ASCII
			} else {
				b[k] = byte(r.IntN(256))
			}
		}
		for pos := 0; pos < 8; pos++ {
			for c := 0; c < 256; c++ {
				w := b
				w[pos] = byte(c)
				want := false
				for _, x := range w {
					want = want || strSpecial[x]
				}
				if got := hasStrSpecial(load64(string(w[:]), 0)); got != want {
					t.Fatalf("%q: hasStrSpecial = %v, want %v", w, got, want)
				}
			}
		}
	}
}
