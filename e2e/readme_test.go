package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/testenv"
)

// The README's HTTP walkthrough runs top to bottom as a script, as a
// newcomer would paste it: against a live `worker api` process (the
// README's port replaced by a free one, bin/worker by the built binary),
// a worker and the simulator. The job it submits is continued (the
// prompt's simulator directive) and merged; the ID is captured; the
// events, stream, cancel, resume and remerge lines answer.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the worker binary")
	}
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\n(KEY=\\$\\(bin/worker apikey create.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("the README has no HTTP walkthrough starting KEY=$(bin/worker apikey create")
	}
	h := newHarness(t)
	h.startWorker()
	bin := testenv.BuildWorker(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	env := append(os.Environ(), "DATABASE_URL="+h.cfg.DatabaseURL, "REDIS_URL="+h.cfg.RedisURL,
		"CARRYOVER_QUEUE="+h.cfg.ChunkQueue)
	api := exec.Command(bin, "api", "--addr", addr, "--ops-addr", "")
	api.Env = env
	if err := api.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.Process.Signal(syscall.SIGTERM)
		_ = api.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API never answered: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	script := strings.NewReplacer("localhost:8080", addr, "bin/worker", bin).Replace(string(block[1]))
	script = "set -euo pipefail\n" + script + "\necho \"ID=$ID\"\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`(?m)^ID=([0-9a-f-]{36})$`).FindSubmatch(out)
	if id == nil {
		t.Fatalf("the walkthrough captured no job ID:\n%s", out)
	}
	for _, want := range []string{"event: status", `"status": "succeeded"`, `"status": "merging"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %q:\n%s", want, out)
		}
	}
	if n := h.count(`SELECT count(*) FROM chunks WHERE job_id = $1::uuid`, string(id[1])); n < 2 {
		t.Errorf("the walkthrough's job has %d chunks: its prompt shows no continuation", n)
	}
	if st := h.wait(string(id[1]), 30*time.Second); st.Status != "succeeded" {
		t.Errorf("the walkthrough's job ended %s after its remerge", st.Status)
	}
}
