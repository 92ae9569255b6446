package merge

// What the JSON scanner expects next. The four that a string may start
// come first (feed relies on the order).
const (
	expValue      = iota // a value (root, after ':' or after ',' in an array)
	expValueOrEnd        // after '['
	expKeyOrEnd          // after '{'
	expKey               // after ',' in an object
	expColon             // after a key
	expCommaOrEnd        // after a value inside a container
	expDone              // after the root value
)

// jsonFrame is one open container.
type jsonFrame struct {
	kind      byte // '{' or '['
	elemStart int  // offset where the element (or member) in progress starts; -1 between
	count     int  // complete elements or members
	keyStart  int  // the key of the member in progress, by offsets in the document
	keyEnd    int
}

// jsonScanner follows a JSON document incrementally: the containers open at
// its end, whether it ends inside a string, where the element in progress
// started. It checks structure (brackets, commas, colons, literals) but
// leaves full validation to encoding/json at the end. Its state is small and
// copyable, so a join can be tried on a copy.
type jsonScanner struct {
	stack     []jsonFrame
	expect    int
	inStr     bool
	isKey     bool
	esc       bool
	uHex      int
	strStart  int
	inLit     bool
	lit       []byte
	litStart  int
	lastComma int
	err       int // offset of the first structural error, -1 when none
	bad       int // offset of the first other validity error, -1 when none
	rootCount int
	subCount  int // elements of the first array directly under the root, -1 before one closes
}

func newJSONScanner() jsonScanner {
	return jsonScanner{err: -1, bad: -1, lastComma: -1, subCount: -1}
}

// clone returns a copy that can be fed without disturbing s.
func (s *jsonScanner) clone() jsonScanner {
	c := *s
	c.stack = append([]jsonFrame(nil), s.stack...)
	c.lit = append([]byte(nil), s.lit...)
	return c
}

func (s *jsonScanner) fail(at int) {
	if s.err < 0 {
		s.err = at
	}
}

// valueStart notes that a value begins at offset at.
func (s *jsonScanner) valueStart(at int) {
	if n := len(s.stack); n > 0 && s.stack[n-1].elemStart < 0 {
		s.stack[n-1].elemStart = at
	}
}

// valueEnd notes that a value just completed.
func (s *jsonScanner) valueEnd() {
	n := len(s.stack)
	if n == 0 {
		s.expect = expDone
		return
	}
	top := &s.stack[n-1]
	top.count++
	top.elemStart = -1
	s.expect = expCommaOrEnd
}

func validLiteral(l []byte) bool {
	switch string(l) {
	case "true", "false", "null":
		return true
	}
	if len(l) == 0 || !(l[0] == '-' || l[0] >= '0' && l[0] <= '9') {
		return false
	}
	for _, c := range l {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// litByte and spaceByte are isLitByte and JSON whitespace as tables, for
// loops that run once per byte; litStart marks the bytes a literal may
// start with: a number's first and the first letters of true, false and
// null.
var litByte, spaceByte, litStart = func() (l, sp, st [256]bool) {
	for c := 0; c < 256; c++ {
		l[c] = isLitByte(byte(c))
	}
	sp[' '], sp['\t'], sp['\n'], sp['\r'] = true, true, true, true
	for _, c := range []byte("-0123456789tfn") {
		st[c] = true
	}
	return l, sp, st
}()

func isLitByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

// feed advances the scanner over text that starts at offset base of the
// document. It stops early once an error is recorded.
//
// It runs once per byte of every document, so the common cases stay in the
// loop: string contents, whitespace, a colon, a key or value string that
// closes within text (read at once) and a literal (read at once from its
// first byte). Containers, commas and errors go to helpers.
func (s *jsonScanner) feed(text string, base int) {
	for i := 0; i < len(text) && s.err < 0; {
		if s.inStr {
			i = s.feedString(text, i, base)
			if !s.inStr {
				s.endString(base + i)
			}
			continue
		}
		if s.inLit {
			i = s.feedLiteral(text, i)
			continue
		}
		c := text[i]
		if spaceByte[c] {
			for i++; i < len(text) && spaceByte[text[i]]; i++ {
			}
			continue
		}
		at := base + i
		if c == '"' && s.expect <= expKey {
			key := s.expect >= expKeyOrEnd
			s.valueStart(at)
			if j := plainStringEnd(text, i+1); j >= 0 {
				if key {
					s.keyEnd(at, base+j)
				} else {
					s.valueEnd()
				}
				i = j
				continue
			}
			s.inStr, s.isKey, s.strStart = true, key, at
			i++
			continue
		}
		switch s.expect {
		case expValue, expValueOrEnd:
			if litStart[c] {
				s.valueStart(at)
				s.inLit, s.litStart, s.lit = true, at, s.lit[:0]
				i = s.feedLiteral(text, i)
				continue
			}
			s.openValue(c, at)
		case expKeyOrEnd, expKey:
			s.notKey(c, at)
		case expColon:
			if c != ':' {
				s.fail(at)
				break
			}
			s.expect = expValue
		case expCommaOrEnd:
			s.afterValue(c, at)
		case expDone:
			s.fail(at)
		}
		i++
	}
}

// endString completes the string that just closed, before offset end: a
// key, which a colon follows, or a value.
func (s *jsonScanner) endString(end int) {
	if s.isKey {
		s.keyEnd(s.strStart, end)
		return
	}
	s.valueEnd()
}

// keyEnd notes the key of the member in progress, by its offsets, and
// expects the colon after it.
func (s *jsonScanner) keyEnd(start, end int) {
	if n := len(s.stack); n > 0 {
		s.stack[n-1].keyStart, s.stack[n-1].keyEnd = start, end
	}
	s.expect = expColon
}

// feedLiteral consumes the bytes of the literal in progress (true, false,
// null or a number) from text[i:] and returns where it stopped. At the byte
// that ends the literal it checks it: a misspelt word is a structural error,
// a number outside JSON's grammar only a validity error.
func (s *jsonScanner) feedLiteral(text string, i int) int {
	j := i
	for j < len(text) && litByte[text[j]] {
		j++
	}
	s.lit = append(s.lit, text[i:j]...)
	if j == len(text) {
		return j
	}
	s.inLit = false
	if !validLiteral(s.lit) {
		s.fail(s.litStart)
		return j
	}
	if l := s.lit[0]; (l == '-' || l >= '0' && l <= '9') && !validNumber(s.lit) {
		s.invalid(s.litStart)
	}
	s.valueEnd()
	return j
}

// openValue reads c, at offset at, where a value other than a string or
// a literal is expected: a container opens, or (right after '[') the array
// closes empty. Anything else is an error.
func (s *jsonScanner) openValue(c byte, at int) {
	switch {
	case c == ']' && s.expect == expValueOrEnd:
		s.close(']', at)
	case c == '{' || c == '[':
		s.valueStart(at)
		s.stack = append(s.stack, jsonFrame{kind: c, elemStart: -1})
		if c == '{' {
			s.expect = expKeyOrEnd
		} else {
			s.expect = expValueOrEnd
		}
	default:
		s.fail(at)
	}
}

// afterValue reads c, at offset at, after a value inside a container: a
// comma, which another element or member follows, or the container's
// closing bracket. Anything else is an error.
func (s *jsonScanner) afterValue(c byte, at int) {
	kind := s.stack[len(s.stack)-1].kind
	switch {
	case c == ',':
		s.lastComma = at
		if kind == '{' {
			s.expect = expKey
		} else {
			s.expect = expValue
		}
	case c == '}' && kind == '{' || c == ']' && kind == '[':
		s.close(c, at)
	default:
		s.fail(at)
	}
}

// notKey reads c, at offset at, where a key is expected and c opens none:
// right after '{' a '}' closes the object empty; anything else is an error.
func (s *jsonScanner) notKey(c byte, at int) {
	if c == '}' && s.expect == expKeyOrEnd {
		s.close('}', at)
		return
	}
	s.fail(at)
}

// close pops the innermost container.
func (s *jsonScanner) close(c byte, at int) {
	n := len(s.stack)
	top := s.stack[n-1]
	s.stack = s.stack[:n-1]
	switch n {
	case 1:
		s.rootCount = top.count
	case 2:
		if top.kind == '[' && s.subCount < 0 {
			s.subCount = top.count
		}
	}
	s.valueEnd()
}

// strSpecial marks the bytes that end a run of plain string content: the
// closing quote, a backslash and the control characters JSON forbids raw.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// feedString consumes string bytes from text[i:] and returns where it
// stopped: just past the closing quote, or the end of text. Plain content is
// skipped by a table lookup per byte, with no call per byte; escapes and raw
// control characters are checked on the way, so the scanner validates string
// contents as encoding/json would (a raw control character or a bad escape
// is a validity error, not a structural one: joins are still chosen by
// structure).
func (s *jsonScanner) feedString(text string, i int, base int) int {
	for i < len(text) {
		if s.uHex > 0 {
			if !isHex(text[i]) {
				s.invalid(base + i)
			}
			s.uHex--
			i++
			continue
		}
		if s.esc {
			s.esc = false
			switch text[i] {
			case 'u':
				s.uHex = 4
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				s.invalid(base + i)
			}
			i++
			continue
		}
		// Eight bytes at a time while none of them is special, then byte
		// by byte.
		for i+8 <= len(text) && !hasStrSpecial(load64(text, i)) {
			i += 8
		}
		for i < len(text) && !strSpecial[text[i]] {
			i++
		}
		if i == len(text) {
			return i
		}
		switch text[i] {
		case '"':
			s.inStr = false
			return i + 1
		case '\\':
			s.esc = true
		default:
			s.invalid(base + i)
		}
		i++
	}
	return i
}

// plainStringEnd returns the offset just past the quote that closes a
// string whose content starts at text[i], when the content is plain (no
// escape, no control character) and closes within text; -1 otherwise (the
// scanner then reads the string byte by byte).
func plainStringEnd(text string, i int) int {
	for i+8 <= len(text) && !hasStrSpecial(load64(text, i)) {
		i += 8
	}
	for i < len(text) && !strSpecial[text[i]] {
		i++
	}
	if i < len(text) && text[i] == '"' {
		return i + 1
	}
	return -1
}

// load64 reads the eight bytes of s at i as a little-endian word (one load
// where the compiler can).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// hasStrSpecial reports whether one of the eight bytes of x ends a run of
// plain string content (strSpecial): a control character, a quote or a
// backslash. Bytes of 0x80 and up are plain.
func hasStrSpecial(x uint64) bool {
	below := (x - 0x20*lowBits) & ^x & highBits // a byte under 0x20
	q := x ^ '"'*lowBits
	b := x ^ '\\'*lowBits
	return below|(q-lowBits)&^q&highBits|(b-lowBits)&^b&highBits != 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// invalid records the first validity error that is not structural.
func (s *jsonScanner) invalid(at int) {
	if s.bad < 0 {
		s.bad = at
	}
}

// validNumber reports whether l follows JSON's number grammar exactly.
func validNumber(l []byte) bool {
	i := 0
	if i < len(l) && l[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(l) && l[i] >= '0' && l[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(l) && l[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(l) && l[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(l) && (l[i] == 'e' || l[i] == 'E') {
		i++
		if i < len(l) && (l[i] == '+' || l[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(l)
}

// valid reports whether the scanner has seen exactly one valid JSON value,
// so that a final validation with encoding/json is not needed.
func (s *jsonScanner) valid() bool {
	return s.complete() && s.bad < 0
}

// complete reports whether the scanner has seen one whole root value.
func (s *jsonScanner) complete() bool {
	return s.err < 0 && s.expect == expDone && !s.inStr && !s.inLit
}
