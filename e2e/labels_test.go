package e2e_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/testenv"
)

// Tenants choose model names; reported as they are, each new name would be
// a new Prometheus series, without bound. A model the price table lacks is
// reported as model="other", and a priced one under the table's name (a
// dated variant, or any name with the priced prefix, included).
func TestSecurityModelLabelBounded(t *testing.T) {
	// Serial: asynq's queue metrics read every queue in Redis, and fail
	// whole when a parallel test deletes its queue in between.
	h := newHarness(t)
	addr := h.startWorkerWithHealth()
	unpriced := testenv.RandomName("attacker-model-")
	prefixed := testenv.RandomName("gpt-4.1-mini-attacker")
	for _, model := range []string{unpriced, prefixed} {
		j := h.enqueue("format=text size=300 seed=72", client.Request{Model: model, MaxOutputTokens: 400})
		if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
			t.Fatalf("job of model %s: %s", model, st.Status)
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if strings.Contains(body, "attacker") {
		t.Errorf("a tenant's model name became a label value:\n%s", grepLines(body, "attacker"))
	}
	for _, series := range []string{`carryover_model_call_seconds_count{model="other",outcome="stop"} 1`,
		`carryover_tokens_total{kind="output",model="other"}`,
		`carryover_model_call_seconds_count{model="gpt-4.1-mini",outcome="stop"} 1`} {
		if !strings.Contains(body, series) {
			t.Errorf("no %s in /metrics:\n%s", series, grepLines(body, "carryover_model_call_seconds_count"))
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
