package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/carryover/carryover/carryovertype"
)

// toolName is the shape OpenAI accepts for function and schema names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

const maxToolsBytes = 64 << 10

// Schemas (json_schema.schema, each tool's parameters) are bounded in shape
// before they are compiled: compiling a 63 KB schema nested 1,700 deep took
// the schema library about 24 CPU-seconds, while the walk that refuses it
// reads each token once. OpenAI's structured outputs allow at most 10
// levels of schema nesting and 5,000 object properties in all; a schema
// level is two JSON levels ("properties", then the property's schema), so
// 32 JSON levels leave room past OpenAI's 10 schema levels, and 10,000 JSON
// values hold a schema of a few thousand properties. A schema under both
// compiles in tens of milliseconds (measured: 2,000 properties in 30 ms;
// compile time grows faster than linearly with depth only).
const (
	maxSchemaDepth = 32
	maxSchemaNodes = 10_000
)

// checkSchemaShape walks raw JSON token by token, without building it, and
// says what is wrong when it nests deeper than maxSchemaDepth or holds more
// than maxSchemaNodes nodes (objects, arrays, keys and scalars); "" when it
// is within both. The walk is linear in the bytes and its memory is bounded
// by the depth.
func checkSchemaShape(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, nodes := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF && depth == 0 {
			return ""
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return "is not valid JSON: " + err.Error()
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			nodes++
			if depth++; depth > maxSchemaDepth {
				return fmt.Sprintf("nests deeper than %d levels", maxSchemaDepth)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		default: // a scalar, or an object's key
			nodes++
		}
		if nodes > maxSchemaNodes {
			return fmt.Sprintf("holds more than %d JSON nodes (keys and values)", maxSchemaNodes)
		}
	}
}

// maxToolProblems bounds how many tools' problems one request reports.
const maxToolProblems = 10

// checkTools validates function tools in the Responses API's shape, naming
// every problem by its path ("tools", "tools[1].name",
// "tools[0].parameters"), for up to maxToolProblems tools at fault.
func checkTools(raw json.RawMessage) []carryovertype.FieldError {
	var out []carryovertype.FieldError
	bad := func(field, format string, args ...any) {
		out = append(out, carryovertype.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(raw) > maxToolsBytes {
		bad("tools", "is larger than %d bytes", maxToolsBytes)
		return out
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		bad("tools", `must be a list of {"type":"function","name":...,"parameters":{...}} objects`)
		return out
	}
	for i, t := range tools {
		if len(out) >= maxToolProblems {
			break
		}
		var typ, name string
		_ = json.Unmarshal(t["type"], &typ)
		_ = json.Unmarshal(t["name"], &name)
		if typ != "function" {
			bad(fmt.Sprintf("tools[%d].type", i), "must be \"function\", got %q", typ)
		}
		if !toolName.MatchString(name) {
			bad(fmt.Sprintf("tools[%d].name", i), "must be 1-64 letters, digits, '_' or '-', got %q", name)
		}
		if p, ok := t["parameters"]; ok {
			field := fmt.Sprintf("tools[%d].parameters", i)
			if msg := checkSchemaShape(p); msg != "" {
				bad(field, "%s", msg)
			} else if _, err := compileSchema(p); err != nil {
				bad(field, "is not a valid JSON Schema: %v", err)
			}
		}
	}
	return out
}

// checkJSONSchema validates a structured-output request.
func checkJSONSchema(s *carryovertype.JSONSchema) []carryovertype.FieldError {
	var errs []carryovertype.FieldError
	if !toolName.MatchString(s.Name) {
		errs = append(errs, carryovertype.FieldError{Field: "json_schema.name", Message: fmt.Sprintf("must be 1-64 letters, digits, '_' or '-', got %q", s.Name)})
	}
	if len(s.Schema) == 0 {
		errs = append(errs, carryovertype.FieldError{Field: "json_schema.schema", Message: "is required"})
	} else if len(s.Schema) > maxToolsBytes {
		errs = append(errs, carryovertype.FieldError{Field: "json_schema.schema", Message: fmt.Sprintf("is larger than %d bytes", maxToolsBytes)})
	} else if msg := checkSchemaShape(s.Schema); msg != "" {
		errs = append(errs, carryovertype.FieldError{Field: "json_schema.schema", Message: msg})
	} else if _, err := compileSchema(s.Schema); err != nil {
		errs = append(errs, carryovertype.FieldError{Field: "json_schema.schema", Message: "is not a valid JSON Schema: " + err.Error()})
	}
	return errs
}

// compileSchema compiles a JSON Schema that must be self-contained: no
// reference is ever fetched from anywhere. A schema past the shape limits
// is refused, not compiled, wherever it comes from (a job stored before the
// limits included).
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if msg := checkSchemaShape(raw); msg != "" {
		return nil, fmt.Errorf("the schema %s", msg)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, ok := doc.(bool); !ok {
			return nil, fmt.Errorf("a schema is a JSON object")
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "mem:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

// validateAgainst checks a merged document against the job's schema
// (compiled, or the error compiling it); it returns "" when the document
// conforms.
func validateAgainst(sch *jsonschema.Schema, err error, content string) string {
	if err != nil {
		return "schema does not compile: " + err.Error()
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	if err != nil {
		return "the merged document is not JSON: " + err.Error()
	}
	if err := sch.Validate(inst); err != nil {
		return strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return ""
}
