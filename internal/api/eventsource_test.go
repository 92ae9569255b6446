package api_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/api"
)

// eventSourceScript follows a stream with the eventsource npm client (the
// WHATWG EventSource for Node) and prints what it saw, one line each.
const eventSourceScript = `import { EventSource } from 'eventsource'
const [url, key] = process.argv.slice(2)
const es = new EventSource(url, { fetch: (u, init) => fetch(u, { ...init, headers: { ...init.headers, Authorization: 'Bearer ' + key } }) })
es.addEventListener('status', e => console.log('status', e.lastEventId))
es.addEventListener('end', e => console.log('end', e.data))
es.addEventListener('error', e => {
  console.log('error', e.code ?? '', 'readyState', es.readyState)
  if (es.readyState === 2) process.exit(0)
})
setTimeout(() => { console.log('timeout, readyState', es.readyState); process.exit(1) }, 20000)
`

// The real eventsource npm client stops reconnecting to a finished job: it
// reads the status events and the end, reconnects once (it always does when
// a stream closes) and, answered 204, closes for good. Before, it
// reconnected every 3 s for as long as it ran. Runs only with
// CARRYOVER_TEST_EVENTSOURCE set to a directory whose node_modules holds
// eventsource (npm install eventsource@4) and node on PATH.
func TestEventSourceClientStops(t *testing.T) {
	dir := os.Getenv("CARRYOVER_TEST_EVENTSOURCE")
	if dir == "" {
		t.Skip("set CARRYOVER_TEST_EVENTSOURCE to a directory with node_modules/eventsource")
	}
	t.Parallel()
	script := filepath.Join(dir, "carryover-eventsource-test.mjs")
	if err := os.WriteFile(script, []byte(eventSourceScript), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(script) })
	e := newEnv(t, true)
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"[[sim format=csv size=1500 seed=9]] rows","format":"csv","max_output_tokens":200}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "node", script, e.url+acc.Links.Stream, e.key).CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) < 4 {
		t.Fatalf("node: %v\n%s", err, out)
	}
	n := len(lines)
	if !strings.HasPrefix(lines[n-3], "end ") || lines[n-2] != "error  readyState 0" || lines[n-1] != "error 204 readyState 2" {
		t.Fatalf("the client did not end, reconnect once and stop on 204:\n%s", out)
	}
	t.Logf("stopped after %s:\n%s", time.Since(start).Round(time.Millisecond), out)
}
