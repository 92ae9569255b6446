package provider

import (
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeResponse decodes the fields of a Responses API object the worker
// reads. A model's reply is a kilobyte or more of fields it does not read,
// and encoding/json's two reflective passes over it were a third of a call's
// CPU on the worker's side. fastDecode reads the object in one pass; for
// whatever it does not handle (a key that is not lower-case ASCII, which
// encoding/json would match without regard to case; a value of another type
// than expected; invalid UTF-8; a repeated array; a syntax error)
// encoding/json decides, so the result is always what json.Unmarshal gives
// (FuzzDecodeResponse checks it). What w held before is discarded either way,
// as if it were decoded into a zero value.
func decodeResponse(b []byte, w *wireResponse) error {
	var fast wireResponse
	if fastDecode(b, &fast) {
		*w = fast
		return nil
	}
	*w = wireResponse{} // encoding/json would keep fields b does not set
	return json.Unmarshal(b, w)
}

// fastDecode decodes b into w, reporting false if it cannot vouch for the
// result (w is then to be discarded).
func fastDecode(b []byte, w *wireResponse) bool {
	r := jsonReader{b: b}
	ok := r.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return r.str(&w.ID)
		case "status":
			return r.str(&w.Status)
		case "incomplete_details":
			return r.object(func(key []byte) bool {
				if string(key) == "reason" {
					return r.str(&w.IncompleteDetails.Reason)
				}
				return r.skip()
			})
		case "error":
			return r.object(func(key []byte) bool {
				switch string(key) {
				case "code":
					return r.str(&w.Error.Code)
				case "message":
					return r.str(&w.Error.Message)
				}
				return r.skip()
			})
		case "output":
			return r.output(w)
		case "usage":
			u := &w.Usage
			return r.object(func(key []byte) bool {
				switch string(key) {
				case "input_tokens":
					return r.int(&u.InputTokens)
				case "output_tokens":
					return r.int(&u.OutputTokens)
				case "input_tokens_details":
					return r.object(func(key []byte) bool {
						if string(key) == "cached_tokens" {
							return r.int(&u.InputTokensDetails.CachedTokens)
						}
						return r.skip()
					})
				case "output_tokens_details":
					return r.object(func(key []byte) bool {
						if string(key) == "reasoning_tokens" {
							return r.int(&u.OutputTokensDetails.ReasoningTokens)
						}
						return r.skip()
					})
				}
				return r.skip()
			})
		}
		return r.skip()
	})
	r.ws()
	return ok && r.i == len(r.b)
}

// output reads the output items: their types, their content parts' types
// and texts, and a function call's id, call_id, name, arguments and status.
func (r *jsonReader) output(w *wireResponse) bool {
	return readArray(r, &w.Output, func(n int) bool {
		item := &w.Output[n]
		return r.object(func(key []byte) bool {
			switch string(key) {
			case "type":
				return r.str(&item.Type)
			case "id":
				return r.str(&item.ID)
			case "call_id":
				return r.str(&item.CallID)
			case "name":
				return r.str(&item.Name)
			case "arguments":
				return r.str(&item.Arguments)
			case "input":
				return r.str(&item.Input)
			case "status":
				return r.str(&item.Status)
			case "content":
				return readArray(r, &item.Content, func(n int) bool {
					part := &item.Content[n]
					return r.object(func(key []byte) bool {
						switch string(key) {
						case "type":
							return r.str(&part.Type)
						case "text":
							return r.str(&part.Text)
						}
						return r.skip()
					})
				})
			}
			return r.skip()
		})
	})
}

// jsonReader reads JSON strictly: every value it reads or skips must be
// valid, or it reports false.
type jsonReader struct {
	b     []byte
	i     int
	depth int // of nested objects and arrays, bounded as encoding/json bounds it
}

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

func (r *jsonReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c, consuming it.
func (r *jsonReader) next(c byte) bool {
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// null consumes a null, reporting whether there was one.
func (r *jsonReader) null() bool {
	r.ws()
	if len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// object reads an object (or null), calling field for each key with the
// reader at the key's value, which field must consume. Keys must be
// lower-case ASCII (what the API sends): encoding/json matches a struct's
// fields regardless of case, and is left to do so. The key is the input's
// own bytes.
func (r *jsonReader) object(field func(key []byte) bool) bool {
	if r.null() {
		return true
	}
	if !r.next('{') {
		return false
	}
	if r.depth++; r.depth > maxDepth {
		return false
	}
	defer func() { r.depth-- }()
	if r.next('}') {
		return true
	}
	for {
		key, ok := r.key()
		if !ok || !r.next(':') || !field(key) {
			return false
		}
		if r.next(',') {
			continue
		}
		return r.next('}')
	}
}

// key reads an object's key, which must be lower-case ASCII.
func (r *jsonReader) key() ([]byte, bool) {
	if !r.next('"') {
		return nil, false
	}
	start := r.i
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return r.b[start : r.i-1], true
		case (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_':
			return nil, false
		}
	}
	return nil, false
}

// readArray reads an array (or null) into *s, growing it by one zero element
// before calling elem with that element's index. A second array for the same
// field is left to encoding/json, which decodes it over the first one's
// elements.
func readArray[T any](r *jsonReader, s *[]T, elem func(n int) bool) bool {
	if *s != nil {
		return false
	}
	if r.null() {
		return true
	}
	if !r.next('[') {
		return false
	}
	*s = make([]T, 0, 2)
	if r.next(']') {
		return true
	}
	for {
		var zero T
		*s = append(*s, zero)
		if !elem(len(*s) - 1) {
			return false
		}
		if r.next(',') {
			continue
		}
		return r.next(']')
	}
}

// str reads a string (null leaves *s as it is, as encoding/json does),
// unescaping it as encoding/json does. One with invalid UTF-8 (which
// encoding/json replaces) is left to encoding/json.
func (r *jsonReader) str(s *string) bool {
	if r.null() {
		return true
	}
	if !r.next('"') {
		return false
	}
	start := r.i
	var buf []byte // the unescaped text, once an escape is seen
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			raw := r.b[start:r.i]
			r.i++
			if buf == nil {
				if !utf8.Valid(raw) {
					return false
				}
				*s = string(raw)
				return true
			}
			buf = append(buf, raw...)
			if !utf8.Valid(buf) {
				return false
			}
			*s = string(buf)
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return false
			}
			var e byte
			switch r.b[r.i+1] {
			case '"', '\\', '/':
				e = r.b[r.i+1]
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			case 'r':
				e = '\r'
			case 'b':
				e = '\b'
			case 'f':
				e = '\f'
			case 'u':
				rn, ok := hex4(r.b[r.i+2:])
				if !ok {
					return false
				}
				buf = append(buf, r.b[start:r.i]...)
				r.i += 6
				if utf16.IsSurrogate(rn) {
					// A pair makes one rune; anything else is a replacement
					// character, and what follows is read on its own.
					rn2, ok := rune(-1), false
					if len(r.b)-r.i >= 6 && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
						rn2, ok = hex4(r.b[r.i+2:])
					}
					if dec := utf16.DecodeRune(rn, rn2); ok && dec != unicode.ReplacementChar {
						rn = dec
						r.i += 6
					} else {
						rn = unicode.ReplacementChar
					}
				}
				buf = utf8.AppendRune(buf, rn)
				start = r.i
				continue
			default:
				return false
			}
			buf = append(append(buf, r.b[start:r.i]...), e)
			r.i += 2
			start = r.i
		default:
			r.i++
		}
	}
	return false
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

// int reads an integer that fits an int64 (null leaves *n as it is).
func (r *jsonReader) int(n *int64) bool {
	if r.null() {
		return true
	}
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	digits := r.i
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		r.i++
	}
	if r.i == digits || (r.b[digits] == '0' && r.i-digits > 1) {
		return false
	}
	if r.i < len(r.b) {
		switch r.b[r.i] {
		case '.', 'e', 'E':
			return false // encoding/json refuses a fraction for an int64; let it say so
		}
	}
	v, err := strconv.ParseInt(string(r.b[start:r.i]), 10, 64)
	if err != nil {
		return false
	}
	*n = v
	return true
}

// skip reads and discards any value.
func (r *jsonReader) skip() bool {
	r.ws()
	if r.i >= len(r.b) {
		return false
	}
	switch c := r.b[r.i]; {
	case c == '{':
		return r.object(func([]byte) bool { return r.skip() })
	case c == '[':
		r.i++
		if r.depth++; r.depth > maxDepth {
			return false
		}
		defer func() { r.depth-- }()
		if r.next(']') {
			return true
		}
		for {
			if !r.skip() {
				return false
			}
			if r.next(',') {
				continue
			}
			return r.next(']')
		}
	case c == '"':
		return r.skipStr()
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return r.number()
	}
	return false
}

// skipStr reads a string without keeping it: its escapes must be valid, its
// bytes need not be UTF-8 (encoding/json accepts them, and replaces them only
// in what it keeps).
func (r *jsonReader) skipStr() bool {
	r.i++ // the opening quote
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return false
			}
			switch r.b[r.i+1] {
			case '"', '\\', '/', 'n', 't', 'r', 'b', 'f':
				r.i += 2
			case 'u':
				if _, ok := hex4(r.b[r.i+2:]); !ok {
					return false
				}
				r.i += 6
			default:
				return false
			}
		default:
			r.i++
		}
	}
	return false
}

func (r *jsonReader) literal(lit string) bool {
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// number reads a number as JSON's grammar has it.
func (r *jsonReader) number() bool {
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.b[r.i] == '-' {
		r.i++
	}
	if r.i < len(r.b) && r.b[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		return false
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return false
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
