package e2e_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// Every query of docs/queries.md runs against the real schema after real
// jobs and returns rows.
func TestDocumentedQueries(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.startWorker()
	policy, _ := client.ParseErrorPolicy("retry_all(2)")
	j := h.enqueue("format=text size=1500 seed=81 faults=500@1", client.Request{MaxOutputTokens: 100,
		Continuation: client.Continuation{ErrorPolicy: &policy}})
	if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	doc, err := os.ReadFile("../docs/queries.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 8 {
		t.Fatalf("found %d query blocks", len(blocks))
	}
	ran := 0
	for _, b := range blocks {
		for _, q := range strings.Split(b[1], ";") {
			q = strings.TrimSpace(q)
			if q == "" {
				continue
			}
			var args []any
			if strings.Contains(q, ":job") {
				q, args = strings.ReplaceAll(q, ":job", "$1::uuid"), []any{j.id}
			}
			rows, err := h.store.Pool().Query(context.Background(), q, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
			rows.Close()
			// The stuck-job, lost-call, calls-under-way and webhook
			// queries are allowed to find nothing.
			if n == 0 && !strings.Contains(q, "'10 minutes'") && !strings.Contains(q, "FROM call_failures WHERE status = 'lost'") &&
				!strings.Contains(q, "FROM call_starts") && !strings.Contains(q, "FROM webhook_events") {
				t.Errorf("no rows from\n%s", q)
			}
			ran++
		}
	}
	t.Logf("ran %d documented queries", ran)
}
