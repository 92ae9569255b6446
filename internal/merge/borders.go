package merge

import (
	"strings"
	"sync"
)

// buffers is the memory one merge reuses from join to join, so that a join
// allocates nothing in the common case and costs what its chunk costs. It
// holds no state a step reads: what a step reads is its joinCtx. Merges
// take one from bufferPool, so that a job of many small chunks does not grow
// a new set each time.
type buffers struct {
	pi     []int32
	out    []int
	norm   []byte
	dnorm  []byte
	dt, nt []token
	dh, nh []uint64
	score  []int32
	match  []int32
	seed   [seedSlots]int16
	chain  []int16
	// restarts holds the format's restarts for the join at hand.
	restarts []int
	// pos maps content bytes back to the document (reproductionStep).
	pos []int32
	// win is readHabits' stand-in for the document's end.
	win []byte
}

var bufferPool = sync.Pool{New: func() any { return new(buffers) }}

// borders returns, longest first, every length L > 0 such that next[:L] is a
// suffix of doc, looking at most window bytes into each. It runs the
// Knuth-Morris-Pratt automaton of next's head over doc's tail; a border is
// never longer than next's head, so the tail scanned is no longer than it
// and the cost follows the chunk, never the document. The result is valid
// until the next call.
func (s *buffers) borders(doc, next string, window int) []int {
	a := head(next, window)
	b := tail(doc, len(a))
	if a == "" || b == "" {
		return nil
	}
	// A border longer than probe bytes holds the document's last probe
	// bytes: where next's head does not hold the last needle of them, only
	// the short ones are looked for, which is what most joins come to. (A
	// substring of needle bytes is found with vector instructions, on
	// amd64 with AVX2 up to 63 bytes; a longer one by Rabin-Karp, many
	// times slower on text that often holds its first byte.)
	const probe, needle = 64, 32
	if len(a) > 2*probe && len(b) >= probe && !strings.Contains(a, b[len(b)-needle:]) {
		a, b = a[:probe], b[len(b)-probe:]
	}
	if out, ok := s.fastBorders(a, b); ok {
		return out
	}
	if cap(s.pi) < len(a) {
		s.pi = make([]int32, len(a), 2*len(a))
	}
	pi := s.pi[:len(a)]
	pi[0] = 0
	for i, k := 1, int32(0); i < len(a); i++ {
		for k > 0 && a[i] != a[k] {
			k = pi[k-1]
		}
		if a[i] == a[k] {
			k++
		}
		pi[i] = k
	}
	q := int32(0)
	for i := 0; i < len(b); i++ {
		for q > 0 && (int(q) == len(a) || a[q] != b[i]) {
			q = pi[q-1]
		}
		if a[q] == b[i] {
			q++
		}
	}
	out := s.out[:0]
	for q > 0 {
		out = append(out, int(q))
		q = pi[q-1]
	}
	s.out = out
	return out
}

// fastBorders finds the borders by checking each place where next's head
// holds the document's last byte, longest first. Text rarely holds that byte
// often, so this is cheaper than building the automaton; when the checks
// cost more than a few passes over the head (runs of one byte), it gives up
// and borders runs the automaton.
func (s *buffers) fastBorders(a, b string) ([]int, bool) {
	last := b[len(b)-1]
	budget := 4*len(a) + 64
	out := s.out[:0]
	for end := len(a); end > 0; {
		p := strings.LastIndexByte(a[:end], last)
		if p < 0 {
			break
		}
		l := p + 1
		if l > len(b) {
			end = p
			continue
		}
		// Compare backwards: a wrong candidate usually fails at once.
		i, j := p, len(b)-1
		for i >= 0 && a[i] == b[j] {
			i--
			j--
		}
		budget -= p - i + 1
		if budget < 0 {
			return nil, false
		}
		if i < 0 {
			out = append(out, l)
		}
		end = p
	}
	s.out = out
	return out, true
}
