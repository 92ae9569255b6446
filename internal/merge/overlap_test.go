package merge

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestTokenOverlapMatchesFullAlignment checks the shortcuts of tokenOverlap
// (tail tokens read backwards, the LCS bound that skips the alignment, the
// cap on continuation tokens) against the full alignment they replaced, on
// repeats with edits drawn from a small vocabulary where alignments abound.
func TestTokenOverlapMatchesFullAlignment(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("a b c d e f g h i j , . ab abc é")
	accepted := 0
	var s buffers
	for range 20000 {
		var d, n []string
		for range 20 + r.IntN(60) {
			d = append(d, words[r.IntN(len(words))])
		}
		for _, w := range d[len(d)-r.IntN(len(d)):] {
			switch r.IntN(8) {
			case 0:
			case 1:
				n = append(n, words[r.IntN(len(words))], w)
			case 2:
				n = append(n, words[r.IntN(len(words))])
			default:
				n = append(n, w)
			}
		}
		for range r.IntN(30) {
			n = append(n, words[r.IntN(len(words))])
		}
		doc := strings.Join(d, " ")
		if r.IntN(3) == 0 {
			doc = doc[:len(doc)-1]
		}
		next := strings.Join(n, " ")
		c1, f1 := refTokenOverlap(doc, next)
		c2, f2 := s.tokenOverlap(doc, next)
		if c1 != c2 || f1 != f2 {
			t.Fatalf("doc %q next %q: full alignment %d %v, tokenOverlap %d %v", doc, next, c1, f1, c2, f2)
		}
		if c1 > 0 {
			accepted++
		}
	}
	if accepted < 2000 {
		t.Fatalf("only %d accepted alignments: the test no longer exercises the alignment", accepted)
	}
}

// The full alignment as it was before the shortcuts.

// tokenize splits s into tokens, skipping whitespace, stopping after max tokens.
func refTokenize(s string, max int) []token {
	var out []token
	for i := 0; i < len(s) && len(out) < max; {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		j := i + w
		if (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') && !isCJK(r) {
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if !(unicode.IsLetter(r2) || unicode.IsDigit(r2) || r2 == '_') || isCJK(r2) {
					break
				}
				j += w2
			}
		}
		out = append(out, token{i, j})
		i = j
	}
	return out
}

// refVaried reports whether the tail's last dozen tokens hold five distinct
// words with letters: a tail made of few distinct tokens (rules, entity
// runs, repeated headings) aligns with anything; only a varied tail is
// evidence.
func refVaried(dtail string, dt []token) bool {
	distinct := map[string]bool{}
	for _, tk := range dt[max(0, len(dt)-12):] {
		if w := dtail[tk.start:tk.end]; isWordByte(w[0]) && strings.ContainsFunc(w, unicode.IsLetter) {
			distinct[w] = true
		}
	}
	return len(distinct) >= 5
}

// refAlign fills the alignment tables of D document tokens against N
// continuation tokens: score at(i, j) is the best score aligning document
// tokens ending before i (free start) with continuation tokens [0, j), a
// match 1 and a gap or mismatch -1; match counts its matches.
func refAlign(D, N int, eq func(i, j int) bool) (score, match []int, at func(i, j int) int) {
	score = make([]int, (D+1)*(N+1))
	match = make([]int, (D+1)*(N+1))
	at = func(i, j int) int { return i*(N+1) + j }
	for j := 1; j <= N; j++ {
		score[at(0, j)] = -j
	}
	for i := 1; i <= D; i++ {
		for j := 1; j <= N; j++ {
			best, bm := score[at(i-1, j)]-1, match[at(i-1, j)]
			if s := score[at(i, j-1)] - 1; s > best {
				best, bm = s, match[at(i, j-1)]
			}
			if eq(i-1, j-1) {
				if s := score[at(i-1, j-1)] + 1; s > best {
					best, bm = s, match[at(i-1, j-1)]+1
				}
			} else if s := score[at(i-1, j-1)] - 1; s > best {
				best, bm = s, match[at(i-1, j-1)]
			}
			score[at(i, j)], match[at(i, j)] = best, bm
		}
	}
	return score, match, at
}

// tokenOverlap aligns the document's last tokens with the continuation's
// first ones allowing a few edits (a model that repeats its tail with a word
// changed), by a semi-global alignment whose size is bounded by the token
// windows. It returns the bytes of next that repeat the document and the share
// of aligned tokens that matched.
func refTokenOverlap(doc, next string) (int, float64) {
	const maxDoc, maxNext = 48, 96
	dtail := tail(doc, 2<<10)
	dt := refTokenize(dtail, 1<<20)
	if len(dt) > maxDoc {
		dt = dt[len(dt)-maxDoc:]
	}
	nt := refTokenize(head(next, 4<<10), maxNext)
	if len(dt) < 6 || len(nt) < 6 {
		return 0, 0
	}
	if !refVaried(dtail, dt) {
		return 0, 0
	}
	// A tail the document has written before (a list of similar links, a
	// repeated example) aligns with its next repetition: not evidence.
	if repeatedNearby(doc, dtail[dt[len(dt)-6].start:]) {
		return 0, 0
	}
	midWord := len(dtail) > 0 && isWordByte(dtail[len(dtail)-1])
	eq := func(i, j int) bool {
		a := dtail[dt[i].start:dt[i].end]
		b := next[nt[j].start:nt[j].end]
		if i == len(dt)-1 && midWord {
			return strings.HasPrefix(b, a)
		}
		return a == b
	}
	D, N := len(dt), len(nt)
	score, match, at := refAlign(D, N, eq)
	bestJ, bestScore := 0, 0
	for j := 1; j <= N; j++ {
		if s := score[at(D, j)]; s > bestScore {
			bestJ, bestScore = j, s
		}
	}
	if bestJ == 0 || bestScore < 6 || match[at(D, bestJ)] < 8 || !eq(D-1, bestJ-1) {
		return 0, 0
	}
	conf := float64(match[at(D, bestJ)]) / float64(max(bestJ, match[at(D, bestJ)]))
	if conf < 0.8 {
		return 0, 0
	}
	last := nt[bestJ-1]
	cut := last.end
	if midWord {
		a := dtail[dt[D-1].start:dt[D-1].end]
		cut = last.start + len(a)
	}
	return cut, conf
}

// TestNormContains checks the raw search of normContains against searching
// the normalized text.
func TestNormContains(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alpha := "ab \n\t"
	for range 20000 {
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		h := b.String()
		var p strings.Builder
		for range 1 + r.IntN(8) {
			p.WriteByte("ab "[r.IntN(3)])
		}
		pat := []byte(strings.Join(strings.Fields(" x"+p.String()+"x "), " "))
		pat = pat[1 : len(pat)-1] // normalized, may start or end with a space
		so, sl := -1, 0
		for i := 0; i < len(pat); {
			j := i
			for j < len(pat) && pat[j] != ' ' {
				j++
			}
			if j-i > sl {
				so, sl = i, j-i
			}
			i = j + 1
		}
		if sl == 0 {
			continue
		}
		want := strings.Contains(string(normalizeInto(nil, h)), string(pat))
		if got := normContains(h, pat, so, sl); got != want {
			t.Fatalf("h %q pat %q: normContains %v, want %v", h, pat, got, want)
		}
	}
}
