package e2e_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
)

// The worker's operator listener serves health, readiness and Prometheus
// metrics that reflect the jobs it ran.
func TestMetrics(t *testing.T) {
	// Serial: asynq's queue metrics read every queue in Redis, and fail
	// whole when a parallel test deletes its queue in between.
	h := newHarness(t)
	addr := h.startWorkerWithHealth()
	j := h.enqueue("format=csv size=1500 seed=71", client.Request{Format: "csv", MaxOutputTokens: 100})
	if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("readyz %d %s", code, body)
	}
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("metrics %d", code)
	}
	value := func(series string) float64 {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no series %s in /metrics", series)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	if v := value(`carryover_tokens_total{kind="output",model="gpt-4.1-mini"}`); v < 100 {
		t.Errorf("output tokens %v", v)
	}
	if v := value(`carryover_cost_usd_total{model="gpt-4.1-mini"}`); v <= 0 {
		t.Errorf("cost %v", v)
	}
	if v := value(`carryover_jobs_finished_total{status="succeeded",stop_reason="completed"}`); v != 1 {
		t.Errorf("jobs finished %v", v)
	}
	if v := value(`carryover_jobs{status="succeeded"}`); v < 1 {
		t.Errorf("jobs by status %v", v)
	}
	if v := value(`carryover_model_call_seconds_count{model="gpt-4.1-mini",outcome="stop"}`); v != 1 {
		t.Errorf("completed calls %v", v)
	}
	if v := value(`carryover_merge_seconds_count`); v != 1 {
		t.Errorf("merges %v", v)
	}
	if !regexp.MustCompile(`(?m)^asynq_`).MatchString(body) {
		t.Error("asynq's queue metrics are missing")
	}
}
