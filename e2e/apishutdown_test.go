package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/testenv"
)

// freeAddr is a loopback address nothing listens on (a port the kernel
// handed out and took back).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// bindable reports whether a new listener can take addr, as a replacement
// process would.
func bindable(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// apiProcess is `worker api` run as a process of its own.
type apiProcess struct {
	cmd       *exec.Cmd
	addr, ops string
	stderr    *bytes.Buffer
	exited    chan struct{}
}

func startAPIProcess(t *testing.T, h *harness, bin string, args ...string) *apiProcess {
	t.Helper()
	p := &apiProcess{addr: freeAddr(t), ops: freeAddr(t), stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"api", "--addr", p.addr, "--ops-addr", p.ops, "--log-level", "info"}, args...)...)
	p.cmd.Env = append(os.Environ(), "DATABASE_URL="+h.cfg.DatabaseURL, "REDIS_URL="+h.cfg.RedisURL, "CARRYOVER_QUEUE="+h.cfg.ChunkQueue)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + p.addr + "/healthz"); err == nil {
			_ = resp.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker api did not start: %s", p.stderr)
		}
	}
}

// request sends an authenticated request to the API process.
func (p *apiProcess) request(ctx context.Context, method, path, key, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}

// Restarting the API with a stream open: SIGTERM ends the stream with a
// retry hint at once, releases both listeners (the API's and the
// operator's) so that a replacement can bind them, and exits 0 — also when
// a request is stuck (here behind a table lock): it gets --shutdown-grace,
// then its connection is closed. Before, the process waited out a fixed 10 s
// with the operator port still bound (the replacement died with "address
// already in use"), then exited 1 with "context deadline exceeded".
func TestAPIShutdownReleasesPorts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and signals a worker api process")
	}
	bin := testenv.BuildWorker(t)
	tests := []struct {
		name  string
		stuck bool          // a request waits on a lock the test holds
		grace string        // --shutdown-grace
		exit  time.Duration // the process exits within this after SIGTERM
	}{
		{name: "stream open", grace: "10s", exit: 3 * time.Second},
		{name: "stream open and a request stuck", stuck: true, grace: "1s", exit: 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			key, _, err := h.store.CreateAPIKey(context.Background(), "alpha")
			if err != nil {
				t.Fatal(err)
			}
			p := startAPIProcess(t, h, bin, "--shutdown-grace", tt.grace)
			ctx := context.Background()
			resp, err := p.request(ctx, "POST", "/v1/jobs", key, `{"model":"gpt-4.1-mini","input":"p"}`)
			if err != nil {
				t.Fatal(err)
			}
			var acc struct {
				ID string `json:"id"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&acc)
			_ = resp.Body.Close()
			stream, err := p.request(ctx, "GET", "/v1/jobs/"+acc.ID+"/stream", key, "")
			if err != nil || stream.StatusCode != http.StatusOK {
				t.Fatalf("stream: %v %v", stream, err)
			}
			defer stream.Body.Close()
			lines := make(chan string, 100)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stream.Body)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			waitLine(t, lines, "event: status")
			if tt.stuck {
				holdStuckRequest(t, h, p, key, acc.ID)
			}
			signalled := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitLine(t, lines, "retry: ")
			// The ports are free while the process may still be finishing
			// requests: a replacement can start at once.
			for _, addr := range []string{p.ops, p.addr} {
				for !bindable(addr) {
					if time.Since(signalled) > time.Second {
						t.Fatalf("%s still bound %s after SIGTERM", addr, time.Since(signalled).Round(time.Millisecond))
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			select {
			case <-p.exited:
			case <-time.After(tt.exit):
				t.Fatalf("worker api still running %s after SIGTERM: %s", tt.exit, p.stderr)
			}
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("exit code %d after SIGTERM: %s", code, p.stderr)
			}
			t.Logf("exited 0 after %s", time.Since(signalled).Round(time.Millisecond))
		})
	}
}

// waitLine reads stream lines until one starts with prefix (bounded).
func waitLine(t *testing.T, lines <-chan string, prefix string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended before a line %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-timeout:
			t.Fatalf("no line %q within 10 s", prefix)
		}
	}
}

// holdStuckRequest locks api_keys until the test ends and sends a request
// that waits on the lock; it returns once the request is waiting.
func holdStuckRequest(t *testing.T, h *harness, p *apiProcess, key, id string) {
	t.Helper()
	ctx := context.Background()
	tx, err := h.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if resp, err := p.request(rctx, "GET", "/v1/jobs/"+id, key, ""); err == nil {
			_ = resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var waiting int
		if err := h.store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(errors.New("the request never waited on the lock"))
		}
	}
}
