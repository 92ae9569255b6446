package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/testenv"
)

// A NUL character (U+0000) in any string of a request, nested JSON
// included, is refused with a 400 naming the field, and nothing is stored:
// Postgres refuses NUL in text and jsonb, which made each of these a 500.
func TestSecurityNULInRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	model := testenv.RandomName("nul-model-")
	tests := []struct{ name, body, field string }{
		{"model", `{"model":"m\u0000x","input":"p"}`, "model"},
		{"prompt", `{"model":"MODEL","input":"a\u0000b"}`, "input"},
		{"message", `{"model":"MODEL","input":[{"role":"user","content":"ok"},{"role":"user","content":"a\u0000"}]}`, "input[1].content"},
		{"instructions", `{"model":"MODEL","input":"p","instructions":"\u0000"}`, "instructions"},
		{"metadata value", `{"model":"MODEL","input":"p","metadata":{"a":{"b":["x","y\u0000"]}}}`, "metadata.a.b[1]"},
		{"metadata key", `{"model":"MODEL","input":"p","metadata":{"k\u0000":1}}`, "metadata.k\x00"},
		{"idempotency key", `{"model":"MODEL","input":"p","idempotency_key":"k\u0000"}`, "idempotency_key"},
		{"webhook url", `{"model":"MODEL","input":"p","webhook_url":"https://127.0.0.1/\u0000"}`, "webhook_url"},
		{"stop sequence", `{"model":"MODEL","input":"p","continuation":{"stop_sequence":"END\u0000"}}`, "continuation.stop_sequence"},
		{"tool description", `{"model":"MODEL","input":"p","tools":[{"type":"function","name":"f","description":"d\u0000","parameters":{"type":"object"}}]}`, "tools[0].description"},
		{"json schema", `{"model":"MODEL","input":"p","json_schema":{"name":"x","schema":{"type":"object","description":"\u0000"}}}`, "json_schema.schema.description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.do("POST", "/v1/jobs", strings.ReplaceAll(tt.body, "MODEL", model))
			var p api.Problem
			if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != 400 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			for _, f := range p.Errors {
				if f.Field == tt.field && strings.Contains(f.Message, "NUL") {
					return
				}
			}
			t.Fatalf("the problem does not name %q as holding a NUL: %s", tt.field, body)
		})
	}
	var n int
	if err := e.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE model = $1`, model).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d jobs stored by refused requests (%v)", n, err)
	}
	// A backslash followed by u0000 is text, not a NUL: accepted.
	if resp, body := e.do("POST", "/v1/jobs", `{"model":"`+model+`","input":"p","metadata":{"a":"\\u0000"}}`); resp.StatusCode != 202 {
		t.Fatalf("an escaped backslash: %d %s", resp.StatusCode, body)
	}
}

// A job ID is its canonical spelling (lowercase, hyphenated, as the API
// hands it out; openapi.json's format uuid and pattern). Other spellings
// uuid.Parse accepts, and anything else, are not job IDs: a 400 naming id,
// before any lookup (urn:uuid: once reached Postgres' uuid cast, which
// refused it with a 500). A well-formed ID of no job is a 404.
func TestSecurityNonCanonicalJobID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"p"}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	id := acc.ID
	for _, form := range []string{"urn:uuid:" + id, strings.ToUpper(id), strings.ReplaceAll(id, "-", ""), "%7B" + id + "%7D", id + "%00", " " + id, "42", "x"} {
		for _, suffix := range []string{"", "/result", "/events", "/chunks"} {
			path := "/v1/jobs/" + strings.ReplaceAll(form, " ", "%20") + suffix
			resp, body := e.do("GET", path, "")
			var p api.Problem
			_ = json.Unmarshal(body, &p)
			if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" || len(p.Errors) != 1 || p.Errors[0].Field != "id" {
				t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
			}
		}
	}
	for _, action := range []string{"cancel", "resume", "remerge"} {
		if resp, body := e.do("POST", "/v1/jobs/urn:uuid:"+id+"/"+action, ""); resp.StatusCode != 400 {
			t.Errorf("%s urn:uuid: %d %s", action, resp.StatusCode, body)
		}
	}
	if resp, body := e.do("GET", "/v1/jobs/6f1f7c0e-0000-4000-8000-000000000000", ""); resp.StatusCode != 404 {
		t.Errorf("a well-formed ID of no job: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("GET", "/v1/jobs/"+id, ""); resp.StatusCode != 200 {
		t.Fatalf("the canonical ID: %d %s", resp.StatusCode, body)
	}
}

// The Bearer scheme's name is case-insensitive (RFC 7235) and extra spaces
// are tolerated; anything else is still a 401.
func TestSecurityBearerScheme(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	path := "/v1/jobs/6f1f7c0e-0000-4000-8000-000000000000" // authenticated: 404, not 401
	for _, h := range []string{"bearer " + e.key, "BEARER " + e.key, "Bearer   " + e.key, "  bEaReR " + e.key + "  "} {
		if resp, body := e.do("GET", path, "", "Authorization", h); resp.StatusCode != 404 {
			t.Errorf("Authorization %q: %d %s", strings.Replace(h, e.key, "KEY", 1), resp.StatusCode, body)
		}
	}
	for _, h := range []string{"Basic " + e.key, "Bearer", "Bearer ", e.key, "Bearerx " + e.key, "Bearer co_0000"} {
		if resp, _ := e.do("GET", path, "", "Authorization", h); resp.StatusCode != 401 {
			t.Errorf("Authorization %q: %d", strings.Replace(h, e.key, "KEY", 1), resp.StatusCode)
		}
	}
}

// /readyz answers anyone: it names the service that is down, never the
// error (addresses, driver messages), which goes to the log.
func TestSecurityReadyzHidesErrors(t *testing.T) {
	t.Parallel()
	ru, err := url.Parse(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	redisAddr := ru.Host
	proxy := newTCPProxy(t, redisAddr)
	q := testenv.Queue(t)
	var logged strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(b)
	}), nil))
	c, err := client.New(context.Background(), client.Config{DatabaseURL: dbURL,
		RedisURL: strings.Replace(testenv.RedisURL(), redisAddr, proxy.addr(), 1), ChunkQueue: q, Logger: log, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(c, log).Handler())
	t.Cleanup(srv.Close)
	ready := func() (int, api.Problem, string) {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var p api.Problem
		_ = json.Unmarshal(b, &p)
		return resp.StatusCode, p, string(b)
	}
	if code, _, body := ready(); code != 200 {
		t.Fatalf("ready: %d %s", code, body)
	}
	proxy.close()
	code, p, body := ready()
	if code != 503 || p.Detail != "redis unavailable" || strings.Contains(body, proxy.addr()) {
		t.Fatalf("redis down: %d %s", code, body)
	}
	_ = c.Close() // closes the Postgres pool too
	code, p, body = ready()
	if code != 503 || p.Detail != "postgres unavailable" || strings.Contains(body, "closed") {
		t.Fatalf("postgres down: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "not ready") {
		t.Fatalf("the real error was not logged: %s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// tcpProxy forwards loopback connections to target until closed; closing
// it cuts every connection and refuses new ones.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	t.Cleanup(p.close)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) close() {
	if err := p.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
