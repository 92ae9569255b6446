package jobs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/store"
)

// The shape walk refuses what is too deep or too large, says which, and
// lets ordinary schemas through.
func TestCheckSchemaShape(t *testing.T) {
	t.Parallel()
	nest := func(n int) string { return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1) }
	values := func(n int) string { return `[` + strings.TrimSuffix(strings.Repeat(`0,`, n-1), ",") + `]` }
	for _, c := range []struct {
		name, json, want string
	}{
		{"ordinary", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, ""},
		{"depth at the limit", nest(maxSchemaDepth), ""},
		{"one level deeper", nest(maxSchemaDepth + 1), "nests deeper than 32 levels"},
		{"arrays nest too", strings.Repeat(`[`, maxSchemaDepth+1) + strings.Repeat(`]`, maxSchemaDepth+1), "nests deeper"},
		{"nodes at the limit", values(maxSchemaNodes), ""}, // the array and its values
		{"one node more", values(maxSchemaNodes + 1), "more than 10000 JSON nodes"},
		{"keys count", `{` + strings.TrimSuffix(strings.Repeat(`"k":0,`, maxSchemaNodes/2), ",") + `}`, "more than 10000"},
		{"not JSON", `{"a":`, "is not valid JSON"},
	} {
		got := checkSchemaShape([]byte(c.json))
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A job stored before the limits with a schema past them is not compiled
// at its merge: the merge reports the schema as unusable at once.
func TestMergeRefusesDeepStoredSchema(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"properties":{"a":`, 1700) + `{}` + strings.Repeat(`}}`, 1700)
	opts, _ := json.Marshal(Options{JSONSchema: &carryovertype.JSONSchema{Name: "x", Schema: json.RawMessage(deep)}})
	job := store.Job{ID: "00000000-0000-4000-8000-000000000001", Format: "json", Options: opts}
	_, meta, err := MergeChunks(job, []store.Chunk{{Seq: 0, Content: `{"a":1}`, FinishReason: "stop"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if meta.SchemaValid == nil || *meta.SchemaValid || !strings.Contains(meta.SchemaError, "nests deeper than 32 levels") {
		t.Fatalf("schema_valid %v, schema_error %q", meta.SchemaValid, meta.SchemaError)
	}
}

// The cache compiles a job's schema once, again for a changed schema or
// another job, and forgets the least recently used past its size.
func TestSchemaCache(t *testing.T) {
	t.Parallel()
	compiles := 0
	c := newSchemaCache(2, func() { compiles++ })
	s1, s2 := json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"type":"array"}`)
	for _, step := range []struct {
		job  string
		raw  json.RawMessage
		want int
	}{
		{"a", s1, 1}, {"a", s1, 1}, // merge, remerge
		{"a", s2, 2}, // the schema changed
		{"b", s1, 3}, // another job; "a"/s1 is now the oldest and goes
		{"a", s2, 3}, // still kept
		{"a", s1, 4}, // forgotten, compiled again
	} {
		if sch, err := c.get(step.job, step.raw); sch == nil || err != nil {
			t.Fatalf("%s: %v", step.job, err)
		}
		if compiles != step.want {
			t.Fatalf("job %s %s: %d compilations, want %d", step.job, step.raw, compiles, step.want)
		}
	}
}
