package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/carryover/carryover/carryovertype"
)

// toolName is the shape OpenAI accepts for function and schema names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

const maxToolsBytes = 64 << 10

// checkTools validates function tools in the Responses API's shape; it
// returns "" when they are usable.
func checkTools(raw json.RawMessage) string {
	if len(raw) > maxToolsBytes {
		return fmt.Sprintf("is larger than %d bytes", maxToolsBytes)
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return `must be a list of {"type":"function","name":...,"parameters":{...}} objects`
	}
	for i, t := range tools {
		var typ, name string
		_ = json.Unmarshal(t["type"], &typ)
		_ = json.Unmarshal(t["name"], &name)
		switch {
		case typ != "function":
			return fmt.Sprintf("[%d].type must be \"function\", got %q", i, typ)
		case !toolName.MatchString(name):
			return fmt.Sprintf("[%d].name must be 1-64 letters, digits, '_' or '-', got %q", i, name)
		}
		if p, ok := t["parameters"]; ok {
			if _, err := compileSchema(p); err != nil {
				return fmt.Sprintf("[%d].parameters is not a valid JSON Schema: %v", i, err)
			}
		}
	}
	return ""
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
	} else if _, err := compileSchema(s.Schema); err != nil {
		errs = append(errs, carryovertype.FieldError{Field: "json_schema.schema", Message: "is not a valid JSON Schema: " + err.Error()})
	}
	return errs
}

// compileSchema compiles a JSON Schema that must be self-contained: no
// reference is ever fetched from anywhere.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
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

// validateAgainst checks a merged document against the job's schema; it
// returns "" when the document conforms.
func validateAgainst(s *carryovertype.JSONSchema, content string) string {
	sch, err := compileSchema(s.Schema)
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
