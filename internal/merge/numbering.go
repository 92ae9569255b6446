package merge

import (
	"strconv"
	"strings"
)

// numberKeys are the members that number records, as in
// {"line": N, "indent": K, "content": "..."}.
var numberKeys = []string{`"line"`, `"line_number"`, `"lineno"`, `"line_no"`, `"index"`, `"row"`, `"n"`, `"num"`, `"number"`, `"seq"`}

// numRef is one integer value of a numbering key, by offsets in the text
// it was found in.
type numRef struct {
	start, end int
	value      int
}

// numberedValues finds the integer values of key in s. It jumps from one
// occurrence of the quoted key to the next with a substring search: in JSON
// an unescaped quote either opens or closes a string, so an occurrence whose
// opening quote is not escaped and that is followed by a colon is a key, and
// whether s starts inside a string does not matter (a quote inside a string
// is always escaped). A value that runs to the end of s may be cut and is left
// out.
func numberedValues(s, key string) []numRef {
	var out []numRef
	for r, ok := nextNumberedValue(s, 0, key); ok; r, ok = nextNumberedValue(s, r.end, key) {
		out = append(out, r)
	}
	return out
}

// nextNumberedValue is the first value of key in s, as numberedValues reads
// them, whose key occurs at offset from or after, if any.
func nextNumberedValue(s string, from int, key string) (numRef, bool) {
	for i := from; ; {
		q := strings.Index(s[i:], key)
		if q < 0 {
			return numRef{}, false
		}
		if r, ok := numberedValueAt(s, i+q, key); ok {
			return r, true
		}
		// The search goes on past the key: the spaces, colon and digits
		// after it hold no quote, so no key (each starts with one) starts
		// there.
		i += q + len(key)
	}
}

// keyStart[c] reports whether some numbering key starts with c (after its
// quote).
var keyStart = func() (t [256]bool) {
	for _, k := range numberKeys {
		t[k[1]] = true
	}
	return
}()

// probeKey returns the first of numberKeys whose first two values in s are
// consecutive, or "", and which keys have a value in s at all (bit k for
// numberKeys[k]). It is numberedValues for every key at once: one pass over
// the quotes of s instead of one substring search per key.
func probeKey(s string) (string, uint16) {
	var skip [16]int // per key, where its next occurrence may start
	var vals [16][2]int
	var found [16]int
	for i := 0; i < len(s); {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			break
		}
		at := i + q
		i = at + 1
		if at+1 >= len(s) || !keyStart[s[at+1]] {
			continue
		}
		for k, key := range numberKeys {
			if at < skip[k] || found[k] >= 2 || !strings.HasPrefix(s[at:], key) {
				continue
			}
			// The next occurrence starts past this one, and past its
			// value (which holds no quote) if it has one.
			skip[k] = at + len(key)
			if r, ok := numberedValueAt(s, at, key); ok {
				skip[k] = r.end
				vals[k][found[k]] = r.value
				found[k]++
			}
		}
	}
	var present uint16
	for k := range numberKeys {
		if found[k] > 0 {
			present |= 1 << k
		}
	}
	for k, key := range numberKeys {
		if found[k] >= 2 && vals[k][1] == vals[k][0]+1 {
			return key, present
		}
	}
	return "", present
}

// numberingProbe bounds how much of a document is searched for a numbering
// key: records are numbered from the start, so a document that shows none in
// its first bytes is not numbered, and the search stops costing anything.
const numberingProbe = 64 << 10

// stringEnd returns the offset just past the quote closing a string whose
// content starts at i, or -1.
func stringEnd(s string, i int) int {
	for i < len(s) {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return -1
		}
		if backslashes(s[:i+q])%2 == 0 {
			return i + q + 1
		}
		i += q + 1
	}
	return -1
}

// numbering follows consecutive record numbers so that a continuation that
// starts counting again (1, 2, ... instead of 58, 59, ...) is renumbered by
// the offset, never duplicating or dropping a number.
type numbering struct {
	key         string
	last        int // last complete value seen
	lastAt      int // its offset in the document
	seen        int
	consecutive bool
	// present has bit k set once numberKeys[k] had a value in the part of
	// the document probed for a key.
	present uint16
}

// observe records the numbers in doc[from:].
func (n *numbering) observe(doc string, from int) {
	s := doc[from:]
	if n.key == "" {
		if from >= numberingProbe {
			return
		}
		probe := s
		if len(probe) > numberingProbe {
			probe = probe[:numberingProbe]
		}
		var present uint16
		n.key, present = probeKey(probe)
		n.present |= present
		if n.key == "" {
			return
		}
	}
	// Only the last two numbers matter: whether the last follows the one
	// before it. They are searched from the end, so a join costs what the
	// last records cost, not the chunk.
	refs := lastNumberedValues(s, n.key)
	for _, r := range refs {
		// A number split by a cut is not seen, so a step of two still counts.
		n.consecutive = n.seen == 0 || r.value > n.last && r.value <= n.last+2
		n.last, n.lastAt = r.value, from+r.start
		n.seen++
	}
}

// lastNumberedValues is the last two of numberedValues(s, key) (fewer
// when s holds fewer), in order.
func lastNumberedValues(s, key string) []numRef {
	var out [2]numRef
	k := 2
	for end := len(s); k > 0; {
		at := strings.LastIndex(s[:end], key)
		if at < 0 {
			break
		}
		end = at
		if r, ok := numberedValueAt(s, at, key); ok {
			k--
			out[k] = r
		}
	}
	return out[k:]
}

// numberedValueAt reads the number of key at offset at of s, as
// numberedValues does.
func numberedValueAt(s string, at int, key string) (numRef, bool) {
	if backslashes(s[:at])%2 == 1 {
		return numRef{}, false
	}
	j := skipSpace(s, at+len(key))
	if j >= len(s) || s[j] != ':' {
		return numRef{}, false
	}
	j = skipSpace(s, j+1)
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k > j && k < len(s) && k-j < 10 {
		if v, err := strconv.Atoi(s[j:k]); err == nil {
			return numRef{j, k, v}, true
		}
	}
	return numRef{}, false
}

// renumber shifts the numbers of rest when its first one restarts below the
// expected value. recStart is where the record in progress began in doc (-1
// when none); recEnd(rest) returns where that record ends in rest (-1 when it
// does not).
//
// A document cut before it showed two numbers has no key yet; when the
// continuation numbers its records consecutively by a key of which the
// document holds at least one value, that key is used.
func (n *numbering) renumber(doc, rest string, recStart int, recEnd func(string) int) (string, bool) {
	key, last, lastAt := n.key, n.last, n.lastAt
	switch {
	case key != "" && n.seen >= 2 && n.consecutive:
	case key == "" && n.present != 0 && len(doc) < numberingProbe:
		if key, _ = probeKey(head(rest, numberingProbe)); key == "" {
			return rest, false
		}
		seen := numberedValues(doc, key)
		if len(seen) == 0 {
			return rest, false
		}
		for i := 1; i < len(seen); i++ {
			if seen[i].value != seen[i-1].value+1 {
				return rest, false
			}
		}
		last, lastAt = seen[len(seen)-1].value, seen[len(seen)-1].start
	default:
		return rest, false
	}
	// The first number decides; the others are read only to be shifted.
	first, ok := nextNumberedValue(rest, 0, key)
	if !ok {
		return rest, false
	}
	expected := last + 1
	if recStart >= 0 && recStart < len(doc) && lastAt < recStart {
		// The record in progress has not shown its number yet; when the
		// first number comes after that record ends, it belongs to the next.
		if e := recEnd(rest); e >= 0 && e < first.start {
			expected++
		}
	}
	if first.value >= expected {
		return rest, false
	}
	refs := numberedValues(rest, key)
	shift := expected - first.value
	var b strings.Builder
	b.Grow(len(rest) + len(refs))
	prev := 0
	for _, r := range refs {
		b.WriteString(rest[prev:r.start])
		b.WriteString(strconv.Itoa(r.value + shift))
		prev = r.end
	}
	b.WriteString(rest[prev:])
	return b.String(), true
}

// jsonRecordEnd returns the offset in s just past the element in progress,
// which is depth containers deep at s's start, or -1.
func jsonRecordEnd(s string, inStr bool, depth int) int {
	if depth <= 0 {
		return -1
	}
	i := 0
	if inStr {
		if i = stringEnd(s, 0); i < 0 {
			return -1
		}
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			if i = stringEnd(s, i+1); i < 0 {
				return -1
			}
			i--
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
