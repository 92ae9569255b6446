package e2e_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/worker"
)

// hookSecret signs the events of the webhook security tests.
var hookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("security-test-secret-0123"))

// countingReceiver is a loopback webhook receiver that answers status and
// counts the requests it gets (and any that carried an Authorization).
func countingReceiver(t *testing.T, status int) (srv *httptest.Server, requests, withAuth *atomic.Int32) {
	t.Helper()
	requests, withAuth = &atomic.Int32{}, &atomic.Int32{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			withAuth.Add(1)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, requests, withAuth
}

// fieldError reports whether err is a validation error naming field.
func fieldError(err error, field string) (string, bool) {
	var ve *client.ValidationError
	if !errors.As(err, &ve) {
		return "", false
	}
	for _, fe := range ve.Fields {
		if fe.Field == field {
			return fe.Message, true
		}
	}
	return "", false
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loopbackResolver answers every name with 127.0.0.1 and ::1: a name that
// resolves to loopback, without asking DNS.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, nil
}

// Webhook SSRF, with the allow-list off. What a URL says is refused at
// enqueue with a field error naming webhook_url, nothing stored; a name that
// resolves to loopback passes that check and is refused by the worker when
// it connects: the receiver on loopback never sees a request.
func TestSecurityWebhookSSRF(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.WebhookAllow = "http" // plain http for the test's receiver; no address range
	h.cfg.WebhookSecret = hookSecret
	ctx := context.Background()
	strict, err := client.New(ctx, client.Config{DatabaseURL: h.cfg.DatabaseURL, RedisURL: h.cfg.RedisURL,
		ChunkQueue: h.cfg.ChunkQueue, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	for _, u := range []string{
		"https://127.0.0.1/hook", "https://127.0.0.2:8443/hook", "https://localhost/hook", "https://LOCALHOST./hook",
		"https://[::1]/hook", "https://[::ffff:127.0.0.1]/hook", "https://[::ffff:7f00:1]/hook", "https://0.0.0.0/hook",
		"https://[::]/hook", "https://10.1.2.3/hook", "https://172.16.0.1/hook", "https://192.168.1.1/hook",
		"https://100.64.0.1/hook", "https://169.254.169.254/latest/meta-data/", "https://[fd00::1]/hook",
		"https://[fe80::1]/hook", "https://[64:ff9b::a9fe:a9fe]/hook", "https://[2002:7f00:1::1]/hook",
		"https://224.0.0.1/hook", "https://2130706433/hook", "https://127.1/hook", "https://0x7f.0.0.1/hook",
		"http://hooks.example.com/hook",
	} {
		_, err := strict.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "hi"}, WebhookURL: u})
		if msg, ok := fieldError(err, "webhook_url"); !ok {
			t.Errorf("%s: %v, want a field error naming webhook_url", u, err)
		} else {
			t.Logf("%s: webhook_url %s", u, msg)
		}
	}
	if n := h.count(`SELECT count(*) FROM jobs`); n != 0 {
		t.Fatalf("%d jobs stored for refused webhook URLs", n)
	}

	// A name (never sent to DNS) that resolves to loopback, dialed by the
	// worker: refused at dial time, on record, and nothing reaches the
	// receiver.
	recv, requests, _ := countingReceiver(t, http.StatusOK)
	_, port, _ := net.SplitHostPort(recv.Listener.Addr().String())
	h.startWorker(func(o *worker.Options) { o.WebhookResolver = loopbackResolver{} })
	j := h.enqueue("format=text size=200 seed=11", client.Request{WebhookURL: "http://hooks.internal.test:" + port + "/hook"})
	if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	waitFor(t, 15*time.Second, "no refused delivery on record", func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE job_id = $1 AND NOT delivered AND error LIKE '%egress refused%loopback%'`, j.id) > 0
	})
	if n := requests.Load(); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
}

// A 307 from the receiver is a failed attempt, recorded with its status; the
// signed body is never re-sent to where it points.
func TestSecurityWebhookRedirect(t *testing.T) {
	t.Parallel()
	second, secondRequests, _ := countingReceiver(t, http.StatusOK)
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, second.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	h := newHarness(t) // the allow-list lets loopback in, so the first hop is made
	h.cfg.WebhookSecret = hookSecret
	h.startWorker()
	j := h.enqueue("format=text size=200 seed=12", client.Request{WebhookURL: first.URL + "/hook"})
	if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	waitFor(t, 15*time.Second, "no 307 on record", func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE job_id = $1 AND NOT delivered AND http_status = 307
			AND error LIKE '%redirects are not followed%'`, j.id) > 0
	})
	if n := secondRequests.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}

// Credentials in a webhook URL are refused at enqueue, naming webhook_url;
// a stored URL that has them (written before this check) is refused by the
// worker, which never sends them as Basic auth.
func TestSecurityWebhookCredentials(t *testing.T) {
	t.Parallel()
	recv, requests, withAuth := countingReceiver(t, http.StatusOK)
	h := newHarness(t)
	h.cfg.WebhookSecret = hookSecret
	ctx := context.Background()
	for _, u := range []string{"https://user:pass@hooks.example.com/hook", "https://token@hooks.example.com/hook",
		strings.Replace(recv.URL, "http://", "http://user:pass@", 1) + "/hook"} {
		_, err := h.client.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "hi"}, WebhookURL: u})
		if msg, ok := fieldError(err, "webhook_url"); !ok || !strings.Contains(msg, "credentials") {
			t.Errorf("%s: %v, want a field error naming webhook_url", u, err)
		}
	}
	if n := h.count(`SELECT count(*) FROM jobs`); n != 0 {
		t.Fatalf("%d jobs stored", n)
	}
	h.startWorker()
	j := h.enqueue("format=text size=200 seed=13 faults=slow@0:1s", client.Request{WebhookURL: recv.URL + "/hook"})
	withCreds := strings.Replace(recv.URL, "http://", "http://user:pass@", 1) + "/hook"
	if _, err := h.store.Pool().Exec(ctx, `UPDATE jobs SET webhook_url = $2 WHERE id = $1`, j.id, withCreds); err != nil {
		t.Fatal(err)
	}
	if st := h.wait(j.id, 30*time.Second); st.Status != "succeeded" {
		t.Fatalf("job %s", st.Status)
	}
	waitFor(t, 15*time.Second, "no refused delivery on record", func() bool {
		return h.count(`SELECT count(*) FROM webhook_deliveries WHERE job_id = $1 AND NOT delivered AND error LIKE '%credentials%'`, j.id) > 0
	})
	if n, a := requests.Load(), withAuth.Load(); n != 0 || a != 0 {
		t.Fatalf("the receiver got %d requests, %d with Authorization", n, a)
	}
}

// tarpit listens on n loopback ports, accepts connections and never
// answers, holding each until the sender gives up or the test ends.
type tarpit struct {
	lns   []net.Listener
	mu    sync.Mutex
	conns []net.Conn
	open  atomic.Int32
}

func newTarpit(t *testing.T, n int) *tarpit {
	tp := &tarpit{}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		tp.lns = append(tp.lns, ln)
		go tp.serve(ln)
	}
	return tp
}

func (tp *tarpit) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tp.mu.Lock()
		tp.conns = append(tp.conns, c)
		tp.mu.Unlock()
		tp.open.Add(1)
		go func() { // read the request, answer nothing, count the sender giving up
			buf := make([]byte, 32<<10)
			for {
				if _, err := c.Read(buf); err != nil {
					tp.open.Add(-1)
					return
				}
			}
		}()
	}
}

func (tp *tarpit) close() {
	for _, ln := range tp.lns {
		ln.Close()
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, c := range tp.conns {
		c.Close()
	}
}

// Sixteen jobs whose webhooks are tarpits do not hold up another job:
// webhook deliveries run on their own queue and slots, so with two chunk
// slots the other job still finishes while the tarpits hold their
// connections. (On the merge queue, as before, each held delivery took a
// chunk slot for its whole timeout and the other job waited behind them
// all.) Each job has a tarpit of its own, so that no circuit breaker cuts
// the deliveries short: the webhook slots stay full of held connections.
func TestSecurityWebhookTarpit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.cfg.WebhookSecret = hookSecret
	h.cfg.Concurrency = 2
	tp := newTarpit(t, 16)
	h.startWorker()
	t.Cleanup(tp.close) // before the worker stops: cleanups run last first
	var ids []string
	for i, ln := range tp.lns {
		hook := "http://" + ln.Addr().String() + "/hook"
		ids = append(ids, h.enqueue("format=text size=200 seed="+strconv.Itoa(100+i), client.Request{WebhookURL: hook}).id)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		if st := h.wait(id, time.Until(deadline)); st.Status != "succeeded" {
			t.Fatalf("job %s", st.Status)
		}
	}
	waitFor(t, 5*time.Second, "the tarpits hold no delivery", func() bool { return tp.open.Load() >= 2 })
	start := time.Now()
	other := h.enqueue("format=text size=600 seed=99", client.Request{})
	if st := h.wait(other.id, 8*time.Second); st.Status != "succeeded" {
		t.Fatalf("the other job: %s", st.Status)
	}
	held := tp.open.Load()
	t.Logf("the other job took %s, with %d tarpit connections held", time.Since(start).Round(time.Millisecond), held)
	if held == 0 {
		t.Fatal("the tarpit connections were all gone before the other job finished")
	}
}

// After five failures in a row an endpoint's circuit opens: the deliveries
// after them fail fast, on record as "circuit open", without a request.
func TestSecurityWebhookBreaker(t *testing.T) {
	t.Parallel()
	recv, requests, _ := countingReceiver(t, http.StatusInternalServerError)
	h := newHarness(t)
	h.cfg.WebhookSecret = hookSecret
	h.cfg.WebhookConcurrency = 1 // one delivery at a time: the sixth finds the circuit open
	h.startWorker()
	var ids []string
	for i := range 8 {
		ids = append(ids, h.enqueue("format=text size=200 seed="+strconv.Itoa(200+i), client.Request{WebhookURL: recv.URL + "/hook"}).id)
	}
	for _, id := range ids {
		h.wait(id, 30*time.Second)
	}
	waitFor(t, 20*time.Second, "not every job's webhook was tried", func() bool {
		return h.count(`SELECT count(DISTINCT job_id) FROM webhook_deliveries`) == len(ids)
	})
	if n := requests.Load(); n != 5 {
		t.Fatalf("the failing receiver got %d requests, want 5 (the breaker's threshold)", n)
	}
	if n := h.count(`SELECT count(*) FROM webhook_deliveries WHERE NOT delivered AND error LIKE 'circuit open for http://127.0.0.1:%'`); n < 3 {
		t.Fatalf("%d deliveries failed fast", n)
	}
}
