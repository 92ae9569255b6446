package carryovertype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/carryover/carryover/internal/suggest"
)

// A JSON body is checked in one pass that names every problem at once, each
// by its full JSON path in plain words: a value of the wrong type ("must be
// an integer, got the string \"1000\""), an unknown field at any depth
// ("continuation.max_attempt: is not a field of continuation (did you mean
// max_attempts?)"), and an explicit 0 (see RequestExplicitZeros). The
// values with a problem are left out and the rest is decoded, so that
// validation (which knows the ranges and the enums) can name its problems
// too; MergeRequestErrors joins the lists. encoding/json alone stops at the
// first problem, names a nested unknown field without its parent, and speaks
// Go ("cannot unmarshal string into Go struct field ... of type int").
//
// Field names match exactly: encoding/json would also take "Model" or
// "MAX_OUTPUT_TOKENS" for model and max_output_tokens, which hides typos
// from the explicit-zero check; here they are unknown fields, with the
// right name suggested. A null is read as an absent field, as encoding/json
// reads it.

// DecodeRequest reads a JSON request. It returns the request as far as it
// decodes, every problem of the body (wrong types, unknown fields, explicit
// zeros) in the order of the request's fields, and an error only when the
// body is not one JSON object.
func DecodeRequest(data []byte) (Request, []FieldError, error) {
	var r Request
	fields, err := decodeStrict(data, &r, requestZeros)
	return r, MergeRequestErrors(fields), err
}

// DecodeResumeOptions is DecodeRequest for JSON resume options.
func DecodeResumeOptions(data []byte) (ResumeOptions, []FieldError, error) {
	var o ResumeOptions
	fields, err := decodeStrict(data, &o, resumeZeros)
	return o, MergeResumeErrors(fields), err
}

// MergeRequestErrors joins lists of a request's field errors into one, in
// the order of the request's fields, level by level (a field that is not
// one comes after those that are).
// An error on a field an earlier list already names, or on a part of it, is
// left out: decoding's "input: must be a string or a list of messages"
// makes validation's "input: is required" noise.
func MergeRequestErrors(lists ...[]FieldError) []FieldError {
	return mergeFieldErrors(reflect.TypeFor[Request](), lists)
}

// MergeResumeErrors is MergeRequestErrors for resume options.
func MergeResumeErrors(lists ...[]FieldError) []FieldError {
	return mergeFieldErrors(reflect.TypeFor[ResumeOptions](), lists)
}

func mergeFieldErrors(t reflect.Type, lists [][]FieldError) []FieldError {
	var out []FieldError
	for _, list := range lists {
		known := len(out)
		for _, fe := range list {
			if !slices.ContainsFunc(out[:known], func(k FieldError) bool { return within(fe.Field, k.Field) }) {
				out = append(out, fe)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b FieldError) int { return slices.Compare(pathRank(t, a.Field), pathRank(t, b.Field)) })
	return out
}

// pathRank places a field's JSON path (continuation.error_policy.preset,
// input[2].role) in the order of t's fields, level by level: a field that
// is not one comes after those that are, list elements by index.
func pathRank(t reflect.Type, path string) []int {
	var rank []int
	for _, seg := range splitPath(path) {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == inputType {
			t = reflect.TypeFor[[]Message]()
		}
		switch {
		case t == nil:
			rank = append(rank, 0)
		case strings.HasPrefix(seg, "["):
			n, _ := strconv.Atoi(strings.Trim(seg, "[]"))
			rank = append(rank, n)
			t = elemOf(t)
		case t.Kind() == reflect.Struct:
			fields := jsonFields(t)
			i := slices.IndexFunc(fields, func(f jsonField) bool { return f.name == seg })
			if i < 0 {
				rank, t = append(rank, len(fields)), nil
				continue
			}
			rank, t = append(rank, i), fields[i].typ
		default: // a map's key: the keys keep their order
			rank = append(rank, 0)
			t = elemOf(t)
		}
	}
	return rank
}

// elemOf is the element type of a list or map type, else nil.
func elemOf(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		return t.Elem()
	}
	return nil
}

// splitPath splits a JSON path into names and [i] indexes.
func splitPath(path string) []string {
	var segs []string
	for part := range strings.SplitSeq(path, ".") {
		for {
			i := strings.IndexByte(part[min(1, len(part)):], '[')
			if i < 0 {
				break
			}
			i += min(1, len(part))
			segs = append(segs, part[:i])
			part = part[i:]
		}
		segs = append(segs, part)
	}
	return segs
}

// within reports whether field is parent or lies under it.
func within(field, parent string) bool {
	if !strings.HasPrefix(field, parent) {
		return false
	}
	rest := field[len(parent):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// errNotOneValue and the errors wrapping a *json.SyntaxError mean a body
// that is not one JSON value.
var errNotOneValue = errors.New("the body holds more than one JSON value")

// decodeStrict checks data against dst's type and decodes what is sound
// into dst; zeros names the explicit zeros of the decoded body.
func decodeStrict(data []byte, dst any, zeros func(map[string]any) []FieldError) ([]FieldError, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.Is(err, io.EOF):
			return nil, errors.New("the body is empty; send a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errors.New("the JSON is cut off before its end")
		case errors.As(err, &syn):
			return nil, fmt.Errorf("%w (at byte %d)", err, syn.Offset)
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errNotOneValue
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the body must be a JSON object, got %s", describe(doc))
	}
	var c checker
	sound, _ := c.check(doc, reflect.TypeOf(dst).Elem(), "")
	b, err := json.Marshal(sound)
	if err == nil {
		err = json.Unmarshal(b, dst)
	}
	if err != nil {
		// Unreachable while checker knows every type it is given.
		c.bad("", "could not be read: %v", err)
	}
	return append(c.problems, zeros(obj)...), nil
}

// checker walks a decoded JSON value against a Go type, collecting a
// problem for each value that would not decode.
type checker struct{ problems []FieldError }

func (c *checker) bad(path, format string, args ...any) {
	c.problems = append(c.problems, FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
}

var (
	rawType    = reflect.TypeFor[json.RawMessage]()
	inputType  = reflect.TypeFor[Input]()
	policyType = reflect.TypeFor[ErrorPolicy]()
)

// check returns v with every unsound part left out, and false when v itself
// would not decode into t (then it is to be left out).
func (c *checker) check(v any, t reflect.Type, path string) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch t {
	case rawType:
		return v, true
	case inputType:
		return c.input(v, path)
	case policyType:
		return c.policy(v, path)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return c.check(v, t.Elem(), path)
	case reflect.Struct, reflect.Map:
		return c.object(v, t, path)
	case reflect.Slice:
		return c.list(v, t, path)
	case reflect.String:
		return c.want(v, path, "a string", func(v any) bool { _, ok := v.(string); return ok })
	case reflect.Bool:
		return c.want(v, path, "true or false", func(v any) bool { _, ok := v.(bool); return ok })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return c.number(v, path, "an integer", func(n string) error { _, err := strconv.ParseInt(n, 10, t.Bits()); return err })
	case reflect.Float32, reflect.Float64:
		return c.number(v, path, "a number", func(n string) error { _, err := strconv.ParseFloat(n, t.Bits()); return err })
	}
	return v, true
}

func (c *checker) want(v any, path, what string, ok func(any) bool) (any, bool) {
	if !ok(v) {
		c.bad(path, "must be %s, got %s", what, describe(v))
		return nil, false
	}
	return v, true
}

func (c *checker) number(v any, path, what string, parse func(string) error) (any, bool) {
	n, ok := v.(json.Number)
	if !ok {
		c.bad(path, "must be %s, got %s", what, describe(v))
		return nil, false
	}
	if err := parse(string(n)); err != nil {
		if errors.Is(err, strconv.ErrRange) {
			c.bad(path, "is out of range, got %s", n)
		} else {
			c.bad(path, "must be %s, got %s", what, n)
		}
		return nil, false
	}
	return v, true
}

// object checks a JSON object against a struct (known fields in the
// struct's order, then each unknown one) or a map (every key).
func (c *checker) object(v any, t reflect.Type, path string) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.bad(path, "must be an object, got %s", describe(v))
		return nil, false
	}
	out := make(map[string]any, len(m))
	keep := func(k string, typ reflect.Type) {
		if sound, ok := c.check(m[k], typ, join(path, k)); ok {
			out[k] = sound
		}
	}
	if t.Kind() == reflect.Map {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			keep(k, t.Elem())
		}
		return out, true
	}
	fields := jsonFields(t)
	for _, f := range fields {
		if _, present := m[f.name]; present {
			keep(f.name, f.typ)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.ContainsFunc(fields, func(f jsonField) bool { return f.name == k }) {
			c.bad(join(path, k), "%s", unknownField(path, k, fields))
		}
	}
	return out, true
}

// list checks a JSON array; an unsound element becomes null, so the others
// keep their indexes for validation's messages.
func (c *checker) list(v any, t reflect.Type, path string) (any, bool) {
	a, ok := v.([]any)
	if !ok {
		c.bad(path, "must be a list, got %s", describe(v))
		return nil, false
	}
	out := make([]any, len(a))
	for i, e := range a {
		out[i], _ = c.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
	}
	return out, true
}

// input is a prompt string or a list of messages.
func (c *checker) input(v any, path string) (any, bool) {
	switch v.(type) {
	case string:
		return v, true
	case []any:
		return c.list(v, reflect.TypeFor[[]Message](), path)
	}
	c.bad(path, "must be a string (the prompt) or a list of messages, got %s", describe(v))
	return nil, false
}

// policy is the short form of an error policy or its object form. A retry
// count written as 0 in the short form is left to the explicit-zero check,
// which names it.
func (c *checker) policy(v any, path string) (any, bool) {
	switch p := v.(type) {
	case string:
		if _, err := parsePolicy(p); err != nil {
			if !errors.Is(err, ErrExplicitZero) {
				c.bad(path, "%v", err)
			}
			return nil, false
		}
		return v, true
	case map[string]any:
		return c.object(v, policyType, path)
	}
	c.bad(path, `must be a string (the short form, e.g. "retry_all(3)") or an object, got %s`, describe(v))
	return nil, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe says what a JSON value is, for a message: `the string "1000"`,
// 1.5, true, an object, a list.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		if utf8.RuneCountInString(v) > 40 {
			v = string([]rune(v)[:40]) + "…"
		}
		return "the string " + strconv.Quote(v)
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return "null"
}

// unknownField says that name is not a field of the object at path, and
// suggests the field it most likely meant.
func unknownField(path, name string, fields []jsonField) string {
	msg := "is not a field of this request"
	if path != "" {
		msg = "is not a field of " + path
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	best := suggest.Closest(strings.ToLower(name), names) // only a near miss: at most 2 edits
	if alias, ok := otherAPIsNames[name]; ok && slices.Contains(names, alias) {
		best = alias
	}
	if best != "" {
		msg += " (did you mean " + best + "?)"
	}
	return msg
}

// otherAPIsNames are fields of other model APIs a request may bring along,
// with the field of ours that does their work.
var otherAPIsNames = map[string]string{"prompt": "input", "messages": "input", "system": "instructions",
	"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"}

type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists a struct's fields as encoding/json names them, in
// declaration order; a field tagged "-" is none.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type})
	}
	return out
}
