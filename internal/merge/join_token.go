package merge

import (
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenStep: a repeat with its punctuation changed, aligned token by token
// (formats with tokens). The alignment finds the repeat; it is cut only
// when its words are the document's last words, every one (a near match
// is never enough: a list of similar lines aligns with the next one). A
// repeat may not swallow the whole continuation unless it ends as the
// document does: a chunk that only repeats the tail ends the same way, one
// that differs at its end has new content.
func tokenStep(c *joinCtx) (overlap, bool) {
	if !c.tr.tokens {
		return overlap{}, false
	}
	n, conf := c.buf.tokenOverlap(c.doc, c.next)
	if n == 0 || !sameWords(c.doc, c.next[:n]) {
		return overlap{}, false
	}
	if n < len(strings.TrimRight(c.next, " \t\r\n")) || sameEnding(c.doc, c.next) {
		return overlap{cut: n, method: methodToken, confidence: conf}, true
	}
	return overlap{}, false
}

// sameWords reports whether the words (runs of letters and digits) of
// repeat are the document's last words, in order, the first of them
// possibly the end of a longer word of the document's.
func sameWords(doc, repeat string) bool {
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	d := strings.FieldsFunc(tail(doc, 4*len(repeat)+64), func(r rune) bool { return !isWord(r) })
	w := strings.FieldsFunc(repeat, func(r rune) bool { return !isWord(r) })
	if len(w) == 0 || len(w) > len(d) {
		return false
	}
	d = d[len(d)-len(w):]
	for i := range w {
		if i == 0 && strings.HasSuffix(d[0], w[0]) {
			continue
		}
		if w[i] != d[i] {
			return false
		}
	}
	return true
}

// token is a word or a single punctuation rune, by byte offsets.
type token struct{ start, end int }

// nextToken returns the token of s at or after offset i (skipping
// whitespace), or start -1 when there is none.
func nextToken(s string, i int) (int, int) {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i >= len(s) {
		return -1, -1
	}
	c := s[i]
	j := i + 1
	word := false
	if c < utf8.RuneSelf {
		word = asciiWord[c]
	} else {
		r, w := utf8.DecodeRuneInString(s[i:])
		j = i + w
		word = isWordRune(r)
	}
	if word {
		for j < len(s) {
			if c := s[j]; c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				j++
				continue
			}
			r2, w2 := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(r2) {
				break
			}
			j += w2
		}
	}
	return i, j
}

// tokenize appends the tokens of s (offsets plus base) to out, skipping
// whitespace, stopping once out holds max tokens.
func tokenize(out []token, s string, base, max int) []token {
	for i := 0; len(out) < max; {
		a, b := nextToken(s, i)
		if a < 0 {
			break
		}
		out = append(out, token{base + a, base + b})
		i = b
	}
	return out
}

// tailTokens sets s.dt to the last max tokens of doc's last window bytes.
// It tokenizes from a whitespace byte (where no token can straddle) a short
// way back, widening until enough tokens are found, so that the document's
// tail is never tokenized whole at every join.
func (s *buffers) tailTokens(doc string, window, max int) {
	lo := len(doc) - min(window, len(doc))
	if s.asciiTailTokens(doc, lo, max) {
		return
	}
	for back := 512; ; back *= 4 {
		start := len(doc) - back
		if start <= lo {
			s.dt = tokenize(s.dt[:0], doc[lo:], lo, 1<<30)
			break
		}
		for start < len(doc) && !isSpace(doc[start]) {
			start++
		}
		s.dt = tokenize(s.dt[:0], doc[start:], start, 1<<30)
		if len(s.dt) >= max {
			break
		}
	}
	if len(s.dt) > max {
		s.dt = s.dt[len(s.dt)-max:]
	}
}

// asciiTailTokens tokenizes doc[lo:] backwards from its end, stopping after
// max tokens, as long as the text is ASCII (where a token is a run of word
// bytes or one other byte, the same read in either direction). It reports
// false, leaving s.dt to be redone, when it meets a byte beyond ASCII.
func (s *buffers) asciiTailTokens(doc string, lo, max int) bool {
	dt := s.dt[:0]
	i := len(doc)
	for i > lo && len(dt) < max {
		c := doc[i-1]
		if c >= utf8.RuneSelf {
			return false
		}
		if isSpace(c) {
			i--
			continue
		}
		j := i - 1
		if asciiWord[c] {
			for j > lo && doc[j-1] < utf8.RuneSelf && asciiWord[doc[j-1]] {
				j--
			}
			if j > lo && doc[j-1] >= utf8.RuneSelf {
				return false
			}
		}
		dt = append(dt, token{j, i})
		i = j
	}
	// Oldest first.
	for a, b := 0, len(dt)-1; a < b; a, b = a+1, b-1 {
		dt[a], dt[b] = dt[b], dt[a]
	}
	s.dt = dt
	return true
}

func hashToken(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// seedSlots sizes the hash table of document tokens mayAlign looks up.
const seedSlots = 128

// tokenOverlap aligns the document's last tokens with the continuation's
// first ones allowing a few edits (a model that repeats its tail with a word
// changed), by a semi-global alignment whose size is bounded by the token
// windows. It returns the bytes of next that repeat the document and the share
// of aligned tokens that matched.
//
// The alignment only runs when mayAlign's bound leaves room for one it would
// accept; for a clean continuation it rarely does, and the join then costs a
// tokenization of the two heads and a linear pass.
func (s *buffers) tokenOverlap(doc, next string) (int, float64) {
	const maxDoc, maxNext = 48, 96
	s.tailTokens(doc, 2<<10, maxDoc)
	dt := s.dt
	if len(dt) < 6 || !variedTail(doc, dt) {
		return 0, 0
	}
	D := len(dt)
	midWord := isWordByte(doc[len(doc)-1])
	// The continuation's tokens are read only as far as mayAlign needs; an
	// accepted alignment spans at most len(dt)/0.8 of them. It ends with the
	// document's last token (or, cut mid-word, a token that starts with
	// it): a head without that text has none, and nothing need be hashed.
	h := head(next, 4<<10)
	if !strings.Contains(h, doc[dt[D-1].start:dt[D-1].end]) {
		return 0, 0
	}
	s.dh = s.dh[:0]
	for _, tk := range dt {
		s.dh = append(s.dh, hashToken(doc[tk.start:tk.end]))
	}
	if !s.mayAlign(doc, h, midWord, min(maxNext, D*5/4+2)) {
		return 0, 0
	}
	if len(s.nt) < 6 {
		return 0, 0
	}
	// A tail the document has written before (a list of similar links, a
	// repeated example) aligns with its next repetition: not evidence.
	if repeatedNearby(doc, doc[dt[D-6].start:]) {
		return 0, 0
	}
	a := tokenAlignment{doc: doc, next: next, dt: dt, nt: s.nt, dh: s.dh, nh: s.nh, midWord: midWord, prefix: -1}
	if midWord {
		a.prefix = D - 1
	}
	score, match := s.align(&a)
	return a.best(score, match)
}

// variedTail reports whether the document's last dozen tokens hold at least
// five distinct words with letters. A tail made of few distinct tokens
// (rules, entity runs, repeated headings, runs of numbers) aligns with
// anything; only a varied tail of words is evidence. Numbers alone are left
// to the exact steps.
func variedTail(doc string, dt []token) bool {
	var distinct [12]string
	nd := 0
	for _, tk := range dt[max(0, len(dt)-12):] {
		w := doc[tk.start:tk.end]
		if !isWordByte(w[0]) || !strings.ContainsFunc(w, unicode.IsLetter) {
			continue
		}
		seen := false
		for _, d := range distinct[:nd] {
			if d == w {
				seen = true
				break
			}
		}
		if !seen {
			distinct[nd] = w
			nd++
		}
	}
	return nd >= 5
}

// tokenAlignment is what tokenOverlap aligns: the document's tail tokens
// (dt, hashed in dh) against the continuation's head tokens (nt, nh). A
// document cut mid-word (midWord) has its last token matched by any token
// that starts with it; prefix is that token's index then, -1 otherwise, so
// that eq stays small enough to inline into the alignment's inner loop.
type tokenAlignment struct {
	doc, next string
	dt, nt    []token
	dh, nh    []uint64
	midWord   bool
	prefix    int
}

// eq reports whether document token i matches continuation token j.
func (a *tokenAlignment) eq(i, j int) bool {
	d, n := a.doc[a.dt[i].start:a.dt[i].end], a.next[a.nt[j].start:a.nt[j].end]
	if i == a.prefix {
		return strings.HasPrefix(n, d)
	}
	return a.dh[i] == a.nh[j] && d == n
}

// align returns the alignment's tables, (D+1) rows of N+1 cells in s.score
// and s.match (reused from join to join): score[i][j] is the best score
// aligning document tokens ending before i (free start) with continuation
// tokens [0, j), a match scoring 1 and a gap or a mismatch -1; match[i][j]
// counts that alignment's matches.
func (s *buffers) align(a *tokenAlignment) (score, match []int32) {
	D, N := len(a.dt), len(a.nt)
	cells := (D + 1) * (N + 1)
	if cap(s.score) < cells {
		s.score = make([]int32, cells)
		s.match = make([]int32, cells)
	}
	score, match = s.score[:cells], s.match[:cells]
	dh, nh := a.dh, a.nh
	W := N + 1
	for j := 0; j <= N; j++ {
		score[j], match[j] = -int32(j), 0
	}
	for i := 1; i <= D; i++ {
		row, up := i*W, (i-1)*W
		score[row], match[row] = 0, 0
		h := dh[i-1]
		exactRow := i < D || !a.midWord
		for j := 1; j <= N; j++ {
			best, bm := score[up+j]-1, match[up+j]
			if s := score[row+j-1] - 1; s > best {
				best, bm = s, match[row+j-1]
			}
			var same bool
			if exactRow {
				same = h == nh[j-1] && a.eq(i-1, j-1)
			} else {
				same = a.eq(i-1, j-1)
			}
			if same {
				if s := score[up+j-1] + 1; s > best {
					best, bm = s, match[up+j-1]+1
				}
			} else if s := score[up+j-1] - 1; s > best {
				best, bm = s, match[up+j-1]
			}
			score[row+j], match[row+j] = best, bm
		}
	}
	return score, match
}

// best reads the tables align filled: the best-scoring alignment of the
// whole document tail, accepted when it ends with the document's last token
// and has a score of 6, 8 matches and a share of 0.8 matched. It returns the
// bytes of next the alignment spans (cut mid-word, up to the length of the
// document's last token) and that share, or 0, 0.
func (a *tokenAlignment) best(score, match []int32) (int, float64) {
	D, N := len(a.dt), len(a.nt)
	W := N + 1
	bestJ, bestScore := 0, int32(0)
	for j := 1; j <= N; j++ {
		if s := score[D*W+j]; s > bestScore {
			bestJ, bestScore = j, s
		}
	}
	if bestJ == 0 || bestScore < 6 || match[D*W+bestJ] < 8 || !a.eq(D-1, bestJ-1) {
		return 0, 0
	}
	m := int(match[D*W+bestJ])
	conf := float64(m) / float64(max(bestJ, m))
	if conf < 0.8 {
		return 0, 0
	}
	last := a.nt[bestJ-1]
	cut := last.end
	if a.midWord {
		cut = last.start + a.dt[D-1].end - a.dt[D-1].start
	}
	return cut, conf
}

// mayAlign reports whether an alignment tokenOverlap would accept can
// exist, by an upper bound that needs no alignment: the matches of an
// alignment ending at next token j form a common subsequence of the
// document's tail and nt[:j], so they number at most the LCS of the two.
// Accepting needs at least 8 matches, a share of 0.8 of j and a score (at
// most 2*matches - j) of 6, with the document's last token matched at j-1.
// The LCS of every prefix comes from the bit-parallel algorithm of Hyyrö
// (one word per document tail of up to 64 tokens), so the check costs O(N);
// and since j - LCS never shrinks while an accepted alignment needs it at
// most a quarter of the tail, a clean continuation is dropped after a few
// tokens. It reads next's tokens into s.nt and s.nh as it goes, all of the
// first max when it reports true.
func (s *buffers) mayAlign(doc, next string, midWord bool, max int) bool {
	dt := s.dt
	D := len(dt)
	s.nt, s.nh = s.nt[:0], s.nh[:0]
	if D > 64 {
		s.nt = tokenize(s.nt, next, 0, max)
		for _, tk := range s.nt {
			s.nh = append(s.nh, hashToken(next[tk.start:tk.end]))
		}
		return true
	}
	for k := range s.seed {
		s.seed[k] = -1
	}
	if cap(s.chain) < D {
		s.chain = make([]int16, D, 64)
	}
	chain := s.chain[:D]
	for i := 0; i < D; i++ {
		k := s.dh[i] % seedSlots
		chain[i] = s.seed[k]
		s.seed[k] = int16(i)
	}
	lastTok := doc[dt[D-1].start:dt[D-1].end]
	mask := uint64(1)<<D - 1
	if D == 64 {
		mask = ^uint64(0)
	}
	v := ^uint64(0)
	ok := false
	pos := 0
	for j := 0; j < max; j++ {
		a, b := nextToken(next, pos)
		if a < 0 {
			break
		}
		pos = b
		tok := next[a:b]
		h := hashToken(tok)
		s.nt = append(s.nt, token{a, b})
		s.nh = append(s.nh, h)
		if ok {
			continue // only reading the rest of the tokens
		}
		var m uint64
		for i := s.seed[h%seedSlots]; i >= 0; i = chain[i] {
			if (int(i) != D-1 || !midWord) && s.dh[i] == h && doc[dt[i].start:dt[i].end] == tok {
				m |= 1 << uint(i)
			}
		}
		var last bool
		if midWord {
			last = strings.HasPrefix(tok, lastTok)
		} else {
			last = m&(1<<uint(D-1)) != 0
		}
		if last {
			m |= 1 << uint(D-1)
		}
		u := v & m
		v = (v + u) | (v &^ m)
		lcs := D - bits.OnesCount64(v&mask)
		n := j + 1
		if 4*(n-lcs) > D {
			return false // the deficit only grows
		}
		if last && lcs >= 8 && 5*lcs >= 4*n && 2*lcs-n >= 6 {
			ok = true
		}
	}
	return ok
}

// sameEnding reports whether next ends with the same last few bytes (of
// content, trailing whitespace aside) as doc.
func sameEnding(doc, next string) bool {
	d, n := strings.TrimRight(doc, " \t\r\n"), strings.TrimRight(next, " \t\r\n")
	k := min(8, len(d), len(n))
	return k > 0 && d[len(d)-k:] == n[len(n)-k:]
}
