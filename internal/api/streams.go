package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/carryover/carryover/client"
)

// Defaults of StreamLimits: a tenant's dashboard or a few producers
// watching their jobs fit well within them, and a process's open streams
// cost it only memory and a goroutine each (none holds a database
// connection).
const (
	DefaultStreamsPerTenant = 16
	DefaultStreamsTotal     = 256
	DefaultStreamLifetime   = 10 * time.Minute
)

// streamRetryAfter is the Retry-After (seconds) of a refused stream, and
// streamRetryMillis the SSE retry hint sent when a stream's lifetime ends.
const (
	streamRetryAfter  = 10
	streamRetryMillis = 1000
)

// StreamLimits bound the progress streams (GET /v1/jobs/{id}/stream) of one
// API process. A zero field takes its default.
type StreamLimits struct {
	// PerTenant caps a tenant's open streams; past it a stream is a 429.
	PerTenant int
	// Total caps the process's open streams, every tenant's together.
	Total int
	// Lifetime ends a stream after this long with an SSE retry hint; the
	// client reconnects with Last-Event-ID. It bounds what an abandoned
	// connection holds.
	Lifetime time.Duration
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.PerTenant <= 0 {
		l.PerTenant = DefaultStreamsPerTenant
	}
	if l.Total <= 0 {
		l.Total = DefaultStreamsTotal
	}
	if l.Lifetime <= 0 {
		l.Lifetime = DefaultStreamLifetime
	}
	return l
}

// WithStreamLimits sets the bounds on open progress streams.
func WithStreamLimits(l StreamLimits) Option {
	return func(s *Server) { s.streams = newStreamSlots(l) }
}

// streamSlots counts the open streams, per tenant and in all.
type streamSlots struct {
	lim       StreamLimits
	mu        sync.Mutex
	total     int
	perTenant map[string]int
}

func newStreamSlots(l StreamLimits) *streamSlots {
	return &streamSlots{lim: l.withDefaults(), perTenant: map[string]int{}}
}

// take opens a stream for tenant; it returns the function that closes it,
// or why it is refused.
func (s *streamSlots) take(tenant string) (release func(), refused string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.perTenant[tenant]; n >= s.lim.PerTenant {
		return nil, fmt.Sprintf("this tenant has %d open streams, the most allowed; close one or retry later", n)
	}
	if s.total >= s.lim.Total {
		return nil, fmt.Sprintf("this server has %d open streams, the most it serves; retry later", s.total)
	}
	s.total++
	s.perTenant[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.perTenant[tenant]--; s.perTenant[tenant] == 0 {
				delete(s.perTenant, tenant)
			}
		})
	}, ""
}

// StreamStatus is the data of a stream's "status" event: the job's whole
// current state, except that chunk_details holds only the chunks stored
// since the stream's previous event (from ChunkDetailsFrom on), so an event
// costs what changed rather than every chunk's decision again. A stream
// opened with ?snapshot=full sends every chunk in every event instead.
type StreamStatus struct {
	client.Status
	// ChunkDetailsFrom is the seq of the first chunk in chunk_details; the
	// chunks before it were sent in earlier events (or, on a reconnection,
	// before the Last-Event-ID). 0 in a full snapshot.
	ChunkDetailsFrom int `json:"chunk_details_from"`
}

// StreamEnd is the data of the "end" event a stream sends after the job's
// final status: nothing more will come, and a reconnection is answered 204.
type StreamEnd struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Chunks int    `json:"chunks"`
}

// eventID names a status event by what a client has seen once it read it:
// the chunk count and the status ("<chunks>-<status>").
func eventID(st client.Status) string { return fmt.Sprintf("%d-%s", st.Chunks, st.Status) }

// seenChunks reads how many chunks a reconnecting client already has from
// its Last-Event-ID; an id this API did not send, or one naming more chunks
// than the job has, counts as none, so the client is sent them all.
func seenChunks(lastID string, st client.Status) int {
	n, _, ok := strings.Cut(lastID, "-")
	c, err := strconv.Atoi(n)
	if !ok || err != nil || c < 0 || c > st.Chunks {
		return 0
	}
	return c
}

// snapshotMode reads ?snapshot: "delta" (the default) or "full".
func snapshotMode(w http.ResponseWriter, r *http.Request) (full, ok bool) {
	switch r.URL.Query().Get("snapshot") {
	case "", "delta":
		return false, true
	case "full":
		return true, true
	}
	problem(w, http.StatusBadRequest, "invalid request", `snapshot must be "delta" or "full"`,
		client.FieldError{Field: "snapshot", Message: `must be "delta" (the default: each event holds the chunks new since the previous one) or "full"`})
	return false, false
}

// sseWriter writes one stream's events.
type sseWriter struct {
	w      http.ResponseWriter
	f      http.Flusher
	full   bool
	seen   int    // chunks the client has
	lastID string // the id of the last status event the client has
}

// status sends st unless the client has it already.
func (sw *sseWriter) status(st client.Status) {
	id := eventID(st)
	if id == sw.lastID {
		return
	}
	from := sw.seen
	if sw.full || from > len(st.ChunkDetails) {
		from = 0
	}
	ev := StreamStatus{Status: st, ChunkDetailsFrom: from}
	ev.ChunkDetails = st.ChunkDetails[from:]
	b, _ := json.Marshal(ev)
	fmt.Fprintf(sw.w, "id: %s\nevent: status\ndata: %s\n\n", id, b)
	sw.f.Flush()
	sw.seen, sw.lastID = st.Chunks, id
}

// end sends the final event. It has no id, so a client's Last-Event-ID
// stays that of the final status, which a reconnection is answered 204 for.
func (sw *sseWriter) end(st client.Status) {
	b, _ := json.Marshal(StreamEnd{ID: st.ID, Status: st.Status, Chunks: st.Chunks})
	fmt.Fprintf(sw.w, "event: end\ndata: %s\n\n", b)
	sw.f.Flush()
}

// reconnect ends a stream whose job is not over with a retry hint.
func (sw *sseWriter) reconnect(why string) {
	fmt.Fprintf(sw.w, ": %s; reconnect with Last-Event-ID\nretry: %d\n\n", why, streamRetryMillis)
	sw.f.Flush()
}

// streamJob sends the job's progress as Server-Sent Events: a "status"
// event (id "<chunks>-<status>") at once and on every change, then, after
// the final status, an "end" event, and closes. A stream whose lifetime is
// up, or whose server shuts down, ends instead with a retry hint; the client
// reconnects with Last-Event-ID and is sent what changed since that event
// (nothing again), or 204 No Content if that event was the job's final
// status, which tells an EventSource to stop reconnecting. Open streams
// are capped per tenant and per process, and hold no database connection
// while they wait (see client.Watch).
func (s *Server) streamJob(w http.ResponseWriter, r *http.Request) {
	full, ok := snapshotMode(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		problem(w, http.StatusInternalServerError, "streaming unsupported", "")
		return
	}
	tenant := tenantOf(r)
	release, refused := s.streams.take(tenant)
	if refused != "" {
		s.log.WarnContext(r.Context(), "stream refused", "tenant", tenant, "job_id", r.PathValue("id"), "reason", refused)
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		problem(w, http.StatusTooManyRequests, "too many streams", refused)
		return
	}
	defer release()
	ctx, cancel := s.streamContext(r)
	defer cancel()
	updates, err := s.c.Watch(ctx, r.PathValue("id"))
	if err != nil {
		s.streamFailed(w, r, err)
		return
	}
	first, ok := <-updates
	if !ok {
		s.streamFailed(w, r, ctx.Err())
		return
	}
	lastID := r.Header.Get("Last-Event-ID")
	if first.Terminal() && eventID(first) == lastID {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// A stream outlives the server's write timeout, but not its own lifetime.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.streams.lim.Lifetime + time.Minute))
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	s.pump(ctx, r, &sseWriter{w: w, f: flusher, full: full, seen: seenChunks(lastID, first), lastID: lastID}, first, updates)
}

// streamContext bounds a stream by its lifetime, and ends it when the
// server drains.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), s.streams.lim.Lifetime)
	go func() {
		select {
		case <-s.draining:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (s *Server) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// streamFailed answers a stream that could not start: a server shutting
// down says so (503, retry), anything else is the usual error.
func (s *Server) streamFailed(w http.ResponseWriter, r *http.Request, err error) {
	if s.isDraining() {
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusServiceUnavailable, "shutting down", "this server is shutting down; retry")
		return
	}
	if err != nil && r.Context().Err() == nil {
		s.fail(w, r, err)
	}
}

// pump sends st and every later state until the job ends or the stream
// must.
func (s *Server) pump(ctx context.Context, r *http.Request, sw *sseWriter, st client.Status, updates <-chan client.Status) {
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		sw.status(st)
		if st.Terminal() {
			sw.end(st)
			return
		}
		next, ok := s.nextState(sw, ping, updates)
		if !ok {
			switch {
			case r.Context().Err() != nil: // the client left
			case s.isDraining():
				sw.reconnect("server shutting down")
			case ctx.Err() != nil:
				sw.reconnect("stream lifetime reached")
			default: // the job could not be read
				sw.reconnect("progress unavailable")
			}
			return
		}
		st = next
	}
}

// nextState waits for the job's next state, pinging meanwhile; false when the
// updates end or the server drains.
func (s *Server) nextState(sw *sseWriter, ping *time.Ticker, updates <-chan client.Status) (client.Status, bool) {
	for {
		select {
		case st, ok := <-updates:
			return st, ok
		case <-ping.C:
			fmt.Fprint(sw.w, ": ping\n\n")
			sw.f.Flush()
		case <-s.draining:
			return client.Status{}, false
		}
	}
}
