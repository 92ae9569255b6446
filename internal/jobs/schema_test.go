package jobs

import (
	"strings"
	"testing"
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
