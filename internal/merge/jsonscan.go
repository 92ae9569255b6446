package merge

import (
	"strings"
)

// What the JSON scanner expects next.
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
	rootCount int
	subCount  int // elements of the first array directly under the root, -1 before one closes
}

func newJSONScanner() jsonScanner {
	return jsonScanner{err: -1, lastComma: -1, subCount: -1}
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

func isLitByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

// feed advances the scanner over text that starts at offset base of the
// document. It stops early once an error is recorded.
func (s *jsonScanner) feed(text string, base int) {
	for i := 0; i < len(text) && s.err < 0; {
		if s.inStr {
			i = s.feedString(text, i)
			if !s.inStr {
				if s.isKey {
					if n := len(s.stack); n > 0 {
						s.stack[n-1].keyStart, s.stack[n-1].keyEnd = s.strStart, base+i
					}
					s.expect = expColon
				} else {
					s.valueEnd()
				}
			}
			continue
		}
		c := text[i]
		if s.inLit {
			if isLitByte(c) {
				s.lit = append(s.lit, c)
				i++
				continue
			}
			s.inLit = false
			if !validLiteral(s.lit) {
				s.fail(s.litStart)
				return
			}
			s.valueEnd()
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		at := base + i
		switch s.expect {
		case expValue, expValueOrEnd:
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
			case c == '"':
				s.valueStart(at)
				s.inStr, s.isKey, s.strStart = true, false, at
			case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
				s.valueStart(at)
				s.inLit, s.litStart = true, at
				s.lit = append(s.lit[:0], c)
			default:
				s.fail(at)
				return
			}
		case expKeyOrEnd, expKey:
			switch {
			case c == '}' && s.expect == expKeyOrEnd:
				s.close('}', at)
			case c == '"':
				s.valueStart(at)
				s.inStr, s.isKey, s.strStart = true, true, at
			default:
				s.fail(at)
				return
			}
		case expColon:
			if c != ':' {
				s.fail(at)
				return
			}
			s.expect = expValue
		case expCommaOrEnd:
			top := s.stack[len(s.stack)-1]
			switch {
			case c == ',':
				s.lastComma = at
				if top.kind == '{' {
					s.expect = expKey
				} else {
					s.expect = expValue
				}
			case c == '}' && top.kind == '{' || c == ']' && top.kind == '[':
				s.close(c, at)
			default:
				s.fail(at)
				return
			}
		case expDone:
			s.fail(at)
			return
		}
		i++
	}
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

// feedString consumes string bytes from text[i:] and returns where it
// stopped: just past the closing quote, or the end of text.
func (s *jsonScanner) feedString(text string, i int) int {
	for i < len(text) {
		if s.uHex > 0 {
			s.uHex--
			i++
			continue
		}
		if s.esc {
			s.esc = false
			if text[i] == 'u' {
				s.uHex = 4
			}
			i++
			continue
		}
		q := strings.IndexByte(text[i:], '"')
		seg := text[i:]
		if q >= 0 {
			seg = text[i : i+q]
		}
		if b := strings.IndexByte(seg, '\\'); b >= 0 {
			i += b + 1
			s.esc = true
			continue
		}
		if q < 0 {
			return len(text)
		}
		s.inStr = false
		return i + q + 1
	}
	return i
}

// complete reports whether the scanner has seen one whole root value.
func (s *jsonScanner) complete() bool {
	return s.err < 0 && s.expect == expDone && !s.inStr && !s.inLit
}
