package simulator

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// appendJSON appends the response's JSON, the same document json.Marshal
// writes (encode_test compares the two), without reflection: encoding the
// reply was a fifth of the simulator's CPU per call, and the simulator's
// CPU is not what a benchmark of the worker should measure.
func (r *response) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"object":`...)
	b = appendString(b, r.Object)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, r.CreatedAt, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, r.Status)
	b = append(b, `,"background":`...)
	b = strconv.AppendBool(b, r.Background)
	b = append(b, `,"error":`...)
	if r.Error == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"code":`...)
		b = appendString(b, r.Error.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, r.Error.Message)
		b = append(b, '}')
	}
	b = append(b, `,"incomplete_details":`...)
	if r.IncompleteDetails == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"reason":`...)
		b = appendString(b, r.IncompleteDetails.Reason)
		b = append(b, '}')
	}
	b = append(b, `,"instructions":`...)
	b = appendStringPtr(b, r.Instructions)
	b = append(b, `,"max_output_tokens":`...)
	if r.MaxOutputTokens == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*r.MaxOutputTokens), 10)
	}
	b = append(b, `,"metadata":{},"model":`...)
	b = appendString(b, r.Model)
	b = append(b, `,"output":`...)
	if r.Output == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, item := range r.Output {
			if i > 0 {
				b = append(b, ',')
			}
			switch it := item.(type) {
			case reasoningItem:
				b = append(b, `{"type":`...)
				b = appendString(b, it.Type)
				b = append(b, `,"id":`...)
				b = appendString(b, it.ID)
				b = append(b, `,"summary":`...)
				b = appendEmpty(b, it.Summary == nil, len(it.Summary))
				b = append(b, '}')
			case messageItem:
				b = append(b, `{"type":`...)
				b = appendString(b, it.Type)
				b = append(b, `,"id":`...)
				b = appendString(b, it.ID)
				b = append(b, `,"status":`...)
				b = appendString(b, it.Status)
				b = append(b, `,"role":`...)
				b = appendString(b, it.Role)
				b = append(b, `,"content":`...)
				if it.Content == nil {
					b = append(b, "null"...)
				} else {
					b = append(b, '[')
					for j, c := range it.Content {
						if j > 0 {
							b = append(b, ',')
						}
						b = append(b, `{"type":`...)
						b = appendString(b, c.Type)
						b = append(b, `,"text":`...)
						b = appendString(b, c.Text)
						b = append(b, `,"annotations":`...)
						b = appendEmpty(b, c.Annotations == nil, len(c.Annotations))
						b = append(b, '}')
					}
					b = append(b, ']')
				}
				b = append(b, '}')
			case functionCallItem:
				b = append(b, `{"type":`...)
				b = appendString(b, it.Type)
				b = append(b, `,"id":`...)
				b = appendString(b, it.ID)
				b = append(b, `,"call_id":`...)
				b = appendString(b, it.CallID)
				b = append(b, `,"name":`...)
				b = appendString(b, it.Name)
				b = append(b, `,"arguments":`...)
				b = appendString(b, it.Arguments)
				b = append(b, `,"status":`...)
				b = appendString(b, it.Status)
				b = append(b, '}')
			default:
				return nil // no other item is made; the caller falls back to json.Marshal
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"parallel_tool_calls":`...)
	b = strconv.AppendBool(b, r.ParallelToolCalls)
	b = append(b, `,"previous_response_id":`...)
	b = appendStringPtr(b, r.PreviousResponseID)
	b = append(b, `,"reasoning":{"effort":`...)
	b = appendStringPtr(b, r.Reasoning.Effort)
	b = append(b, `,"summary":`...)
	b = appendStringPtr(b, r.Reasoning.Summary)
	b = append(b, `},"service_tier":`...)
	b = appendString(b, r.ServiceTier)
	b = append(b, `,"store":`...)
	b = strconv.AppendBool(b, r.Store)
	b = append(b, `,"temperature":`...)
	if b = appendFloat(b, r.Temperature); b == nil {
		return nil
	}
	b = append(b, `,"text":`...)
	if len(r.Text) == 0 || !isCompact(r.Text) {
		return nil // json.Marshal compacts (or refuses) a RawMessage; leave that to it
	}
	b = append(b, r.Text...)
	b = append(b, `,"tool_choice":`...)
	b = appendString(b, r.ToolChoice)
	b = append(b, `,"tools":`...)
	switch {
	case len(r.Tools) == 0:
		b = append(b, "null"...)
	case !isCompact(r.Tools):
		return nil // as for text: json.Marshal compacts it
	default:
		b = append(b, r.Tools...) // the request's tools, echoed
	}
	b = append(b, `,"top_p":`...)
	if b = appendFloat(b, r.TopP); b == nil {
		return nil
	}
	b = append(b, `,"truncation":`...)
	b = appendString(b, r.Truncation)
	b = append(b, `,"usage":`...)
	if u := r.Usage; u == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.InputTokens), 10)
		b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(u.InputTokensDetails.CachedTokens), 10)
		b = append(b, `},"output_tokens":`...)
		b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
		b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(u.OutputTokensDetails.ReasoningTokens), 10)
		b = append(b, `},"total_tokens":`...)
		b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
		b = append(b, '}')
	}
	b = append(b, `,"user":`...)
	b = appendStringPtr(b, r.User)
	return append(b, '}')
}

// appendEmpty appends a slice of empty structs: null when nil, else that
// many {}.
func appendEmpty(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "{}"...)
	}
	return append(b, ']')
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendFloat formats f as encoding/json does; nil for a value JSON cannot hold.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// isCompact reports whether raw holds no white space outside its strings, so
// that json.Marshal would write it unchanged.
func isCompact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the bytes appendString copies as they are: ASCII that
// needs no escape. A reply is mostly such bytes, and a look-up for each
// makes appendString a third faster than comparing each with the others.
var plainASCII = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string, escaped as encoding/json escapes
// it (HTML characters and U+2028/U+2029 included; invalid UTF-8 becomes
// U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
