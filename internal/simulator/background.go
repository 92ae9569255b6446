package simulator

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Statuses only a background response goes through.
const (
	statusQueued     = "queued"
	statusInProgress = "in_progress"
	statusCancelled  = "cancelled"
)

const (
	// maxQueued caps how long a background response waits in the queue
	// before it runs: a tenth of the latency, at most this.
	maxQueued = 500 * time.Millisecond
	// clockTick bounds each wait of a stream for its next event under
	// Config.Now, a test's clock that may jump at any time.
	clockTick = 20 * time.Millisecond
	// statsPath serves BackgroundStats as JSON, for a benchmark that runs
	// the simulator in another process.
	statsPath = "/sim/stats"
	// openingEvents is how many events a background stream opens with:
	// response.created, response.queued and response.in_progress.
	openingEvents = 3
)

// bgState is a background response's life, which is read off the clock
// whenever it is asked for: no goroutine or timer runs per response, so
// tens of thousands can be in flight. Its answer is decided at creation,
// as a synchronous call's is (respState.resp), and withheld until its end.
type bgState struct {
	created  time.Time
	queued   time.Duration // how long it waits before it runs
	run      time.Duration // from creation to its end: the latency, and a slow fault's delay
	streamed bool          // created with stream=true: a GET may stream it again
	start    int           // the document offset its text starts at
	from     int           // the document offset the conversation had reached before it
	inChars  int           // the conversation's characters before its output

	// Guarded by Server.mu.
	cancel    *cancelState  // nil unless cancelled
	cancelled chan struct{} // made by a stream waiting on the response; closed by its cancel
}

// cancelState is a background response as a cancel left it.
type cancelState struct {
	at        time.Time
	resp      *response // status cancelled, what it had written, the usage up to then
	end       int       // the document offset its text reached
	convChars int
}

func (b *bgState) runs() time.Time { return b.created.Add(b.queued) }
func (b *bgState) ends() time.Time { return b.created.Add(b.run) }

// status is the status at now of a background response that was not
// cancelled: queued, in progress, or ended ("" then, the final status
// being the response's own).
func (b *bgState) status(now time.Time) string {
	switch {
	case now.Before(b.runs()):
		return statusQueued
	case now.Before(b.ends()):
		return statusInProgress
	}
	return ""
}

// expired reports whether the response ended more than keep before now.
func (b *bgState) expired(now time.Time, c *cancelState, keep time.Duration) bool {
	end := b.ends()
	if c != nil {
		end = c.at
	}
	return now.Sub(end) > keep
}

// view is the background response as a client reading it at now sees it:
// queued or in progress without output or usage, then as it ended.
func (st *respState) view(now time.Time, c *cancelState) *response {
	if c != nil {
		return c.resp
	}
	if status := st.bg.status(now); status != "" {
		return pending(st.resp, status)
	}
	return st.resp
}

// share is the part of its generation a background response has done at
// now: it starts when the response leaves the queue and ends with it.
func (b *bgState) share(now time.Time) float64 {
	gen := b.run - b.queued
	if gen <= 0 {
		return 1
	}
	return min(1, max(0, float64(now.Sub(b.runs()))/float64(gen)))
}

// at is when a background response's stream has carried sent of its total
// bytes of text: its reasoning tokens come first, then the text at an even
// pace, all of it by the response's end.
func (st *respState) at(sent, total int) time.Time {
	b, u := st.bg, st.resp.Usage
	var share float64
	if u.OutputTokens > 0 {
		text := float64(u.OutputTokens - u.OutputTokensDetails.ReasoningTokens)
		if total > 0 {
			text *= float64(sent) / float64(total)
		}
		share = (float64(u.OutputTokensDetails.ReasoningTokens) + text) / float64(u.OutputTokens)
	}
	return b.runs().Add(time.Duration(share * float64(b.run-b.queued)))
}

// timedEvent is a background stream's event with the time it is due.
type timedEvent struct {
	streamEvent
	due time.Time
}

// events is a background response's whole stream, each event with the
// time it is due, and the bytes of text it carries: response.created and
// response.queued at creation, response.in_progress when it leaves the
// queue, its output as it is generated, and its terminal event at its end.
func (st *respState) events() ([]timedEvent, int) {
	b, resp := st.bg, st.resp
	queued, running := pending(resp, statusQueued), pending(resp, statusInProgress)
	out, total := outputEvents(resp)
	evs := make([]timedEvent, 0, len(out)+openingEvents+1)
	evs = append(evs,
		timedEvent{streamEvent{typ: "response.created", fields: map[string]any{"response": queued}}, b.created},
		timedEvent{streamEvent{typ: "response.queued", fields: map[string]any{"response": queued}}, b.created},
		timedEvent{streamEvent{typ: "response.in_progress", fields: map[string]any{"response": running}}, b.runs()})
	for _, ev := range out {
		evs = append(evs, timedEvent{ev, st.at(ev.sent, total)})
	}
	terminal := streamEvent{typ: "response." + terminalEvent(resp.Status), fields: map[string]any{"response": resp}, sent: total}
	return append(evs, timedEvent{terminal, b.ends()}), total
}

// streamBackground sends the events of a background response after
// sequence number after (-1: all of them), each when it is due: those
// already due at once, the others as the clock reaches them. A cancel ends
// the stream after the events due before it, with no terminal event (the
// API has none for a cancel). cut (a fault spoiling the create's own
// stream) stops it after about half the text, as writeStream does. opened
// is called once the events due at once are out, the first wait before.
func (s *Server) streamBackground(ctx context.Context, w http.ResponseWriter, st *respState, after int, cut bool, opened func()) error {
	evs, total := st.events()
	startSSE(w)
	sw := &streamWriter{w: w, seq: max(after+1, 0)}
	for i := sw.seq; i < len(evs) && sw.err == nil; i++ {
		ev := evs[i]
		if cut && total == 0 && i >= openingEvents {
			break
		}
		if ev.due.After(s.now()) {
			flush(w)
			opened()
			if !s.waitFor(ctx, st.bg, ev.due) {
				return ctx.Err()
			}
		}
		if c := s.cancelOf(st.bg); c != nil && ev.due.After(c.at) {
			break
		}
		sw.event(ev.typ, ev.fields)
		if cut && cutAfter(ev.streamEvent, total) {
			break
		}
	}
	flush(w)
	return sw.err
}

// waitFor waits until the clock reaches due, ctx is done (false) or the
// response is cancelled.
func (s *Server) waitFor(ctx context.Context, b *bgState, due time.Time) bool {
	s.mu.Lock()
	if b.cancelled == nil {
		b.cancelled = make(chan struct{})
		if b.cancel != nil {
			close(b.cancelled)
		}
	}
	cancelled := b.cancelled
	s.mu.Unlock()
	for {
		d := due.Sub(s.now())
		if d <= 0 {
			return true
		}
		if s.cfg.Now != nil {
			d = min(d, clockTick)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-cancelled:
			t.Stop()
			return true
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// cancelOf returns the response's cancel, nil if it was not cancelled.
func (s *Server) cancelOf(b *bgState) *cancelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return b.cancel
}

// createBackground stores a background response and answers its create at
// once: with the response queued, or, when streamed, with its events as
// they come (the stream can be dropped and resumed by a GET). The response
// is created whatever happens to this reply: a malformed or broken fault
// spoils the reply alone (a broken one that is not streamed drops the
// connection unanswered), and the response runs to its end regardless.
func (s *Server) createBackground(ctx context.Context, w http.ResponseWriter, call Call, t turn, p *responseParts, rp reply, b *bgState) {
	resp := &p.resp
	resp.Background = true
	p.completedAt = endSeconds(b.ends())
	p.state.bg = b
	s.creating.RLock()
	release := sync.OnceFunc(s.creating.RUnlock)
	defer release()
	s.store(resp.ID, &p.state)
	s.addBackground(b)
	if rp.broken && !rp.streamed {
		s.dropConnection(call)
	}
	rp.stream = func(cut bool) error { return s.streamBackground(ctx, w, &p.state, -1, cut, release) }
	rp.encode = func(buf []byte) ([]byte, error) {
		body, err := json.Marshal(pending(resp, statusQueued))
		if err != nil {
			return nil, fmt.Errorf("encoding response: %w", err)
		}
		return append(buf, body...), nil
	}
	s.answer(w, call, t, rp)
}

// handleCancel serves POST /v1/responses/{id}/cancel. A background
// response still queued or in progress ends cancelled, with what it had
// generated: its input billed in full, its output tokens the share of its
// generation time gone by. One that has ended is returned as it is, so a
// cancel can be repeated.
func (s *Server) handleCancel(w http.ResponseWriter, id string) {
	now := s.now()
	st, c, ok := s.find(id, now)
	switch {
	case !ok || id == "":
		notFound(w, id)
	case st.bg == nil:
		invalid("", "", "Only background responses can be cancelled.").write(w)
	case c != nil || st.bg.status(now) == "":
		writeJSON(w, http.StatusOK, st.view(now, c))
	default:
		writeJSON(w, http.StatusOK, s.commitCancel(st, st.cancelled(now)))
	}
}

// commitCancel makes c the response's end unless it ended first (or
// another cancel came first), and returns the response as it then stands.
func (s *Server) commitCancel(st *respState, c *cancelState) *response {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, now := st.bg, s.now()
	s.inFlight(now) // the response is still among the deadlines if it has not ended by now
	if b.cancel != nil || b.status(now) == "" {
		return st.view(now, b.cancel)
	}
	b.cancel = c
	if b.cancelled != nil {
		close(b.cancelled)
	}
	s.bg.cancelledLive++
	s.bg.cancelled.Add(1)
	return c.resp
}

// cancelled is the response cancelled at tc: the output its stream had
// carried by then, the usage up to then, and how far the document got.
func (st *respState) cancelled(tc time.Time) *cancelState {
	b, resp := st.bg, st.resp
	out, total := outputEvents(resp)
	sent := 0
	for _, ev := range out {
		if ev.delta && !st.at(ev.sent, total).After(tc) {
			sent = ev.sent
		}
	}
	c := *resp
	c.Status, c.Output = statusCancelled, partialOutput(resp.Output, sent, !tc.Before(b.runs()))
	c.IncompleteDetails, c.Error, c.CompletedAt = nil, nil, nil
	u := *resp.Usage
	u.OutputTokens = int(float64(u.OutputTokens) * b.share(tc))
	u.OutputTokensDetails.ReasoningTokens = min(u.OutputTokensDetails.ReasoningTokens, u.OutputTokens)
	u.TotalTokens = u.InputTokens + u.OutputTokens
	c.Usage = &u

	cs := &cancelState{at: tc, resp: &c, end: b.from, convChars: b.inChars}
	for _, item := range c.Output {
		switch it := item.(type) {
		case messageItem:
			text := it.Content[0].Text
			cs.end, _ = follow(st.doc, b.start, text, st.spec.Behavior)
			cs.end = runeStart(st.doc, cs.end)
			cs.convChars += len(text)
		case functionCallItem:
			cs.convChars += len(it.Arguments)
		}
	}
	return cs
}

// partialOutput is the output items of a response whose stream has carried
// sent bytes of their text: the reasoning once generation started, the
// items whose text went out whole, and the one cut short (incomplete).
func partialOutput(items []any, sent int, started bool) []any {
	out := []any{}
	for _, item := range items {
		switch it := item.(type) {
		case messageItem:
			text := it.Content[0].Text
			if sent < len(text) {
				if sent > 0 {
					it.Status = statusIncomplete
					it.Content = []outputText{{Type: "output_text", Text: text[:sent], Annotations: []struct{}{}}}
					out = append(out, it)
				}
				return out
			}
			sent -= len(text)
			out = append(out, it)
		case functionCallItem:
			if sent < len(it.Arguments) {
				if sent > 0 {
					it.Status, it.Arguments = statusIncomplete, it.Arguments[:sent]
					out = append(out, it)
				}
				return out
			}
			sent -= len(it.Arguments)
			out = append(out, it)
		default:
			if started {
				out = append(out, item)
			}
		}
	}
	return out
}

// getParams are a GET /v1/responses/{id}'s parameters.
type getParams struct {
	stream bool
	after  int // starting_after; -1 when absent
}

// readGetParams reads stream and starting_after from the query. openai-go's
// GetStreaming sends stream as a JSON body, even on a GET, so a body is
// read too.
func readGetParams(r *http.Request) (getParams, *requestError) {
	p := getParams{after: -1}
	q := r.URL.Query()
	if v := q.Get("stream"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, invalid("invalid_type", "stream", fmt.Sprintf("Invalid 'stream': expected a boolean, but got '%s' instead.", v))
		}
		p.stream = b
	}
	if v := q.Get("starting_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, invalid("invalid_type", "starting_after",
				fmt.Sprintf("Invalid 'starting_after': expected a non-negative integer, but got '%s' instead.", url.QueryEscape(v)))
		}
		p.after = n
	}
	if r.ContentLength == 0 {
		return p, nil // a poll: nothing more to read
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		return p, invalidJSON(err)
	}
	p.stream = p.stream || body.Stream
	return p, nil
}

// BackgroundStats counts what happened to background responses, for tests
// and benchmarks; GET /sim/stats serves it as JSON.
type BackgroundStats struct {
	Created       int64 `json:"created"`        // background responses created: each is a billed call
	Polls         int64 `json:"polls"`          // plain GETs of a background response
	StreamResumes int64 `json:"stream_resumes"` // GETs that streamed one (?stream=true)
	Cancelled     int64 `json:"cancelled"`      // responses a cancel stopped (a repeated cancel is not counted)
	Expired       int64 `json:"expired"`        // GETs, streams and cancels answered 404 because retention had passed
	InFlight      int64 `json:"in_flight"`      // responses not ended now
	// Under Config.RateLimits: model calls let through, and refused (429).
	// RateTokens is the tokens those calls counted against the TPM limit.
	ModelCalls  int64 `json:"model_calls"`
	RateLimited int64 `json:"rate_limited"`
	RateTokens  int64 `json:"rate_tokens"`
}

// bgBook is the Server's account of background responses.
type bgBook struct {
	created, polls, resumes, cancelled, expired atomic.Int64
	modelCalls, rateLimited, rateTokens         atomic.Int64

	// Guarded by Server.mu.
	live          deadlines // ends of the responses not ended when last looked
	cancelledLive int       // how many of live were cancelled
}

// BackgroundStats returns the background counters, InFlight as of now.
func (s *Server) BackgroundStats() BackgroundStats {
	s.mu.Lock()
	inFlight := s.inFlight(s.now())
	s.mu.Unlock()
	b := &s.bg
	return BackgroundStats{Created: b.created.Load(), Polls: b.polls.Load(), StreamResumes: b.resumes.Load(),
		Cancelled: b.cancelled.Load(), Expired: b.expired.Load(), InFlight: int64(inFlight),
		ModelCalls: b.modelCalls.Load(), RateLimited: b.rateLimited.Load(), RateTokens: b.rateTokens.Load()}
}

// addBackground counts a new background response and books its end.
func (s *Server) addBackground(b *bgState) {
	s.bg.created.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight(s.now()) // drops the ended ones, so the book stays the size of what is in flight
	heap.Push(&s.bg.live, deadline{b.ends(), b})
}

// inFlight drops from the book the responses ended by now and returns how
// many are left that no cancel ended. s.mu must be held.
func (s *Server) inFlight(now time.Time) int {
	live := &s.bg.live
	for len(*live) > 0 && !(*live)[0].at.After(now) {
		if d := heap.Pop(live).(deadline); d.bg.cancel != nil {
			s.bg.cancelledLive--
		}
	}
	return len(*live) - s.bg.cancelledLive
}

// deadline is when a background response ends, unless cancelled first.
type deadline struct {
	at time.Time
	bg *bgState
}

// deadlines is a min-heap of deadlines (container/heap).
type deadlines []deadline

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlines) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlines) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlines) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = deadline{}
	*h = old[:len(old)-1]
	return d
}

// HoldCreates holds back new creates (POST /v1/responses) until release is
// called, and returns once every create already under way has sent its
// response's id (its whole reply, unless it streams): while held, every
// response created has been answered, so a test can, say, kill a client
// knowing no create is between the server's answer and the client's
// record of it. Creates refused or faulted before they store a response
// are not held.
func (s *Server) HoldCreates() (release func()) {
	s.creating.Lock()
	return sync.OnceFunc(s.creating.Unlock)
}
