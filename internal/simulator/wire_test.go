package simulator

import (
	"encoding/json"
	"fmt"
	"testing"
)

// unquoteTokens are JSON string tokens (and a few that are not).
var unquoteTokens = []string{`""`, `"plain"`, `"line\nbreak"`, `"é 東京 🚀"`, `"\u00e9\ud83d\ude80"`, `"quote \" inside"`,
	"\"bad \xff utf-8\"", "\"raw\ttab\"", `"bad escape \q"`, `"short \u12"`, `"unterminated`, `x`, `"`}

// unquote decodes a string token as encoding/json does: the same string,
// or the same error.
func TestUnquote(t *testing.T) {
	t.Parallel()
	for _, tok := range unquoteTokens {
		checkUnquote(t, tok)
	}
}

func FuzzUnquote(f *testing.F) {
	for _, tok := range unquoteTokens {
		f.Add(tok)
	}
	f.Fuzz(checkUnquote)
}

func checkUnquote(t *testing.T, tok string) {
	got, gotErr := unquote([]byte(tok))
	var want string
	wantErr := json.Unmarshal([]byte(tok), &want)
	if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("%q: %q, %v; encoding/json: %q, %v", tok, got, gotErr, want, wantErr)
	}
}
