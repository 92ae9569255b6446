package simulator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	defaultMaxResponses = 200000
	bufferSize          = 4 << 10 // a new reply buffer's capacity: a typical reply fits
	maxPooledBuffer     = 1 << 20 // a bigger buffer is left to the collector, not kept
	defaultMaxTokens    = 4096
	defaultRetention    = 10 * time.Minute // how long OpenAI keeps a background response
	maxRequestBody      = 64 << 20
	docCacheEntries     = 4096
)

// Config tunes a Server. The zero value is usable.
type Config struct {
	// Latency is added to every model reply, to make timing visible in demos.
	// A background response takes it to run instead: its create answers at
	// once.
	Latency time.Duration
	// MaxResponses caps stored responses (and the call log); the oldest are
	// evicted first. Default 200000.
	MaxResponses int
	// Logger receives one debug record per model call; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now. A background response's state is
	// read from it whenever it is asked for, so a test can move time on
	// instead of sleeping.
	Now func() time.Time
	// BackgroundRetention is how long a background response is kept once it
	// has ended; after that it is unknown (404), as OpenAI keeps one for
	// about ten minutes. Default 10 minutes.
	BackgroundRetention time.Duration
	// RateLimits are the requests and tokens per minute each model allows;
	// zero is none (and no x-ratelimit-* headers).
	RateLimits RateLimits
}

// Server is the simulator's http.Handler. It is safe for concurrent use and
// holds all its state itself, so tests can run many servers side by side.
type Server struct {
	cfg  Config
	log  *slog.Logger
	docs *docCache
	ids  atomic.Uint64

	mu        sync.Mutex
	responses map[string]*respState
	order     []string // ring of stored response IDs, oldest at orderHead
	orderHead int
	faultUses map[faultUse]int
	calls     []Call // ring, oldest at callsHead once full
	callsHead int
	bg        bgBook // background responses' counters and deadlines
	rates     rateBook

	// creating is read-locked while a create stores its response and sends
	// its id; HoldCreates write-locks it.
	creating sync.RWMutex

	// bufs holds *[]byte buffers for reply bodies, which a call would
	// otherwise allocate (and the collector free) every time.
	bufs sync.Pool
}

// Call is one logged model call, for assertions such as "a duplicate delivery
// makes no second model call".
type Call struct {
	Tag          string
	Depth        int    // 0 = first request, 1 = first continuation, ...
	Background   bool   // a background response (Responses API background mode)
	API          string // "responses" or "chat"
	Status       int    // HTTP status of the reply
	Outcome      string // completed, incomplete:<reason>, failed, error:<status>, malformed, canceled
	ResponseID   string
	OutputTokens int
	// What the request asked for, so tests can assert what a client sent.
	Stream     bool   // a streaming request
	MaxTokens  int    // max_output_tokens, max_completion_tokens or max_tokens as sent; 0 when absent
	Format     string // output format type sent: "" (none), text, json_object or json_schema
	Structured bool   // a strict json_schema format was sent
	Prompt     string // text of the latest user turn (its first 8 KiB)
	ToolCall   string // "" when the model called no tool, else "complete" or "truncated"
	At         time.Time
}

// maxPromptLog bounds Call.Prompt: the call log keeps up to MaxResponses calls.
const maxPromptLog = 8 << 10

// promptForLog is the logged copy of a prompt: bounded, and not keeping a
// longer text alive.
func promptForLog(p string) string {
	if len(p) > maxPromptLog {
		return strings.Clone(p[:runeStart(p, maxPromptLog)])
	}
	return p
}

// toolCallState is Call.ToolCall for a turn.
func toolCallState(t turn) string {
	switch {
	case t.call == nil:
		return ""
	case t.call.complete:
		return "complete"
	}
	return "truncated"
}

type faultUse struct {
	conv  string
	index int
}

// respState is what a stored response contributes to its continuation.
type respState struct {
	resp      *response // the response as it ends (a background one's final state)
	spec      Spec
	doc       string
	end       int // document offset emitted so far, including this response
	depth     int
	convChars int      // characters of the whole conversation so far (input and output)
	bg        *bgState // nil unless a background response
}

// New returns a simulator.
func New(cfg Config) *Server {
	if cfg.MaxResponses <= 0 {
		cfg.MaxResponses = defaultMaxResponses
	}
	if cfg.BackgroundRetention <= 0 {
		cfg.BackgroundRetention = defaultRetention
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{
		cfg:       cfg,
		log:       log,
		docs:      newDocCache(docCacheEntries),
		responses: make(map[string]*respState),
		faultUses: make(map[faultUse]int),
	}
}

// ServeHTTP routes the OpenAI paths, with or without the /v1 prefix, and
// the simulator's own: /healthz and /sim/stats (never under /v1, which is
// OpenAI's), which need no key.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if path == statsPath && get {
		writeJSON(w, http.StatusOK, s.BackgroundStats())
		return
	}
	if p, ok := strings.CutPrefix(path, "/v1"); ok && (p == "" || p[0] == '/') {
		path = p
	}
	if path == "/healthz" && get {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	if !authorized(r) {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
	if (path == "/responses" || path == "/chat/completions") && r.Method == http.MethodPost && s.rateLimited(w, r) {
		return
	}
	switch {
	case path == "/responses" && r.Method == http.MethodPost:
		s.handleResponses(w, r)
	case strings.HasPrefix(path, "/responses/") && r.Method == http.MethodGet:
		s.handleGetResponse(w, r, strings.TrimPrefix(path, "/responses/"))
	case strings.HasPrefix(path, "/responses/") && strings.HasSuffix(path, "/cancel") && r.Method == http.MethodPost:
		s.handleCancel(w, strings.TrimSuffix(strings.TrimPrefix(path, "/responses/"), "/cancel"))
	case path == "/chat/completions" && r.Method == http.MethodPost:
		s.handleChat(w, r)
	case path == "/models" && r.Method == http.MethodGet:
		s.handleModels(w)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "",
			fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
	}
}

// authorized requires a non-empty bearer token; its value is never inspected
// beyond that, and never logged.
func authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) != ""
}

func (s *Server) handleModels(w http.ResponseWriter) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	ids := []string{"gpt-4o-mini", "gpt-4.1", "gpt-5", "o3", "o4-mini"}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: 1700000000, OwnedBy: "simulator"})
	}
	writeJSON(w, http.StatusOK, list)
}

// buffer returns an empty reply buffer; release gives it back.
func (s *Server) buffer() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, bufferSize)
	return &b
}

// release returns a buffer for reuse. Nothing may refer to its bytes after.
func (s *Server) release(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	s.bufs.Put(b)
}

// newID returns a deterministic, unique-per-server identifier: prefix and
// 32 hex digits. A call makes several, so it writes them without fmt.
func (s *Server) newID(prefix string) string {
	n := s.ids.Add(1)
	var buf [48]byte
	b := append(buf[:0], prefix...)
	b = appendHex64(b, mix(n))
	b = appendHex64(b, n)
	return string(b)
}

const hexDigits = "0123456789abcdef"

// appendHex64 appends x as 16 lower-case hex digits, as %016x writes it.
func appendHex64(b []byte, x uint64) []byte {
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[x>>shift&0xf])
	}
	return b
}

// mix is splitmix64's finalizer: it makes sequential IDs look unrelated.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// store remembers a response for continuation and GET, evicting the oldest
// when the cap is reached.
func (s *Server) store(id string, st *respState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) < s.cfg.MaxResponses {
		s.order = append(s.order, id)
	} else {
		delete(s.responses, s.order[s.orderHead])
		s.order[s.orderHead] = id
		s.orderHead = (s.orderHead + 1) % len(s.order)
	}
	s.responses[id] = st
}

// previous returns the stored response a continuation names, as far as
// the conversation got with it, or the API's refusal: an unknown or expired
// id is not found, and a background response still running cannot be
// continued yet (a cancelled one is continued from what it wrote).
func (s *Server) previous(id string) (respState, *requestError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.responses[id]
	if ok && st.bg != nil {
		now, c := s.now(), st.bg.cancel
		switch {
		case st.bg.expired(now, c, s.cfg.BackgroundRetention):
			ok = false
		case c != nil:
			prev := *st
			prev.end, prev.convChars = c.end, c.convChars
			return prev, nil
		case now.Before(st.bg.ends()):
			return respState{}, invalid("", "previous_response_id", fmt.Sprintf(
				"Previous response with id '%s' is still %s: it can be continued once it has finished.", id, st.bg.status(now)))
		}
	}
	if !ok {
		return respState{}, &requestError{status: http.StatusNotFound, typ: "invalid_request_error", code: "previous_response_not_found",
			param: "previous_response_id", msg: fmt.Sprintf("Previous response with id '%s' not found.", id)}
	}
	return *st, nil
}

// find looks up a stored response for a GET, a stream or a cancel at now,
// with its cancel if it is a cancelled background response. A background
// response kept past its retention is gone, and counted as expired.
func (s *Server) find(id string, now time.Time) (*respState, *cancelState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.responses[id]
	if !ok || st.bg == nil {
		return st, nil, ok
	}
	c := st.bg.cancel
	if st.bg.expired(now, c, s.cfg.BackgroundRetention) {
		s.bg.expired.Add(1)
		return nil, nil, false
	}
	return st, c, true
}

// takeFault returns the fault due for this request, if any, and spends one
// use of it: a fault fires on the first Times requests at its depth of a
// conversation, so the retry of that depth succeeds.
func (s *Server) takeFault(spec Spec, depth int) (Fault, bool) {
	if len(spec.Faults) == 0 {
		return Fault{}, false
	}
	conv := spec.faultKey()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range spec.Faults {
		if f.Depth != depth {
			continue
		}
		k := faultUse{conv, i}
		if s.faultUses[k] < f.Times {
			if len(s.faultUses) >= s.cfg.MaxResponses {
				clear(s.faultUses)
			}
			s.faultUses[k]++
			return f, true
		}
	}
	return Fault{}, false
}

// now reads the clock: Config.Now, or the wall clock.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// record logs a model call.
func (s *Server) record(c Call) {
	c.At = s.now()
	// Boxing the attributes allocates, even for a logger that drops them.
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("model call", "api", c.API, "tag", c.Tag, "depth", c.Depth, "status", c.Status,
			"outcome", c.Outcome, "response_id", c.ResponseID, "output_tokens", c.OutputTokens,
			"stream", c.Stream, "max_tokens", c.MaxTokens, "format", c.Format, "tool_call", c.ToolCall)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) < s.cfg.MaxResponses {
		s.calls = append(s.calls, c)
		return
	}
	s.calls[s.callsHead] = c
	s.callsHead = (s.callsHead + 1) % len(s.calls)
}

// Calls returns, oldest first, the logged model calls of conversations whose
// directive has tag=tag.
func (s *Server) Calls(tag string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	n := len(s.calls)
	for i := 0; i < n; i++ {
		c := s.calls[(s.callsHead+i)%n]
		if c.Tag == tag {
			out = append(out, c)
		}
	}
	return out
}

// sleep waits d or until ctx is done, reporting whether it waited fully.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
