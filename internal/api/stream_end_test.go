package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/simulator"
)

// sseEvent is one event of a raw stream, as an EventSource would dispatch it.
type sseEvent struct {
	id, event, data string
}

// rawStream reads a whole stream (bounded): its events, and whether it
// carried a retry hint.
func rawStream(t *testing.T, r io.Reader) (events []sseEvent, retry bool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch field, value, _ := strings.Cut(line, ": "); {
			case line == "":
				if ev.data != "" {
					events = append(events, ev)
				}
				ev = sseEvent{}
			case field == "id":
				ev.id = value
			case field == "event":
				ev.event = value
			case field == "data":
				ev.data = value
			case field == "retry":
				retry = true
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end within 30 s")
	}
	return events, retry
}

// A stream ends: after the job's final status it sends an "end" event and
// closes, with no retry hint, and a reconnection with the final status's id
// is answered 204 No Content, which stops an EventSource (the eventsource
// client reconnected every 3 s to a finished job). Each status event holds
// only the chunks new since the previous one (?snapshot=full: all of them);
// a reconnection with an older Last-Event-ID is sent what it missed, then
// the end.
func TestStreamEnds(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, true, simulator.Config{Latency: 150 * time.Millisecond})
	resp, body := e.do("POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"[[sim format=csv size=2500 seed=61]] orders","format":"csv",
		"max_output_tokens":200,"continuation":{"max_attempts":30}}`)
	var acc api.Accepted
	if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	job := acc.Links.Self
	r, _ := e.openStream(job, e.key, 5*time.Second)
	if r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v", r)
	}
	events, retry := rawStream(t, r.Body)
	final := checkLive(t, events, retry)
	finalID := events[len(events)-2].id
	t.Logf("%d status events for %d chunks", len(events)-1, final.Chunks)

	tests := []struct {
		name, query, lastID string
		want                int // the status code
		from                int // chunk_details_from of the one status event
	}{
		{name: "after the final status", lastID: finalID, want: http.StatusNoContent},
		{name: "after the first status", lastID: events[0].id, want: http.StatusOK, from: firstChunks(t, events)},
		{name: "after one chunk", lastID: "1-running", want: http.StatusOK, from: 1},
		{name: "no Last-Event-ID", want: http.StatusOK},
		{name: "an id this API did not send", lastID: "x", want: http.StatusOK},
		{name: "full snapshots", query: "?snapshot=full", lastID: "1-running", want: http.StatusOK},
		{name: "snapshot=delta", query: "?snapshot=delta", lastID: "2-running", want: http.StatusOK, from: 2},
		{name: "full, after the final status", query: "?snapshot=full", lastID: finalID, want: http.StatusNoContent},
		{name: "an unknown snapshot mode", query: "?snapshot=all", want: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.lastID != "" {
				header = []string{"Last-Event-ID", tt.lastID}
			}
			if tt.lastID == finalID && tt.want == http.StatusOK {
				t.Skip("the job had ended before the stream opened")
			}
			r := e.getStream(job+"/stream"+tt.query, header...)
			if r.StatusCode != tt.want {
				t.Fatalf("reconnection: %d, want %d", r.StatusCode, tt.want)
			}
			switch tt.want {
			case http.StatusBadRequest:
				var p api.Problem
				if err := json.NewDecoder(r.Body).Decode(&p); err != nil || len(p.Errors) != 1 || p.Errors[0].Field != "snapshot" {
					t.Fatalf("problem %+v %v", p, err)
				}
				return
			case http.StatusNoContent:
				if b, _ := io.ReadAll(r.Body); len(b) != 0 {
					t.Fatalf("204 with a body: %q", b)
				}
				return
			}
			got, retry := rawStream(t, r.Body)
			if len(got) != 2 || got[0].event != "status" || got[1].event != "end" || retry {
				t.Fatalf("events %v, retry hint %v; want one status and the end", got, retry)
			}
			st := decodeStatus(t, got[0])
			if st.ChunkDetailsFrom != tt.from || len(st.ChunkDetails) != final.Chunks-tt.from || st.Status.Status != final.Status.Status {
				t.Fatalf("from %d, %d chunk details, status %s; want from %d, %d, %s",
					st.ChunkDetailsFrom, len(st.ChunkDetails), st.Status.Status, tt.from, final.Chunks-tt.from, final.Status.Status)
			}
		})
	}
}

// getStream opens path (a stream, with its query) with tenant alpha's key.
func (e env) getStream(path string, header ...string) *http.Response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	resp := e.send(ctx, "GET", path, "", header...)
	e.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// checkLive checks a stream read from the job's start: status events whose
// chunk details are each the chunks new since the previous event, in order
// and none twice, the last of them final, then the end event and no retry
// hint. It returns the final status.
func checkLive(t *testing.T, events []sseEvent, retry bool) api.StreamStatus {
	t.Helper()
	if len(events) < 2 || retry {
		t.Fatalf("%d events, retry hint %v", len(events), retry)
	}
	next := 0
	var st api.StreamStatus
	for i, ev := range events[:len(events)-1] {
		if ev.event != "status" || ev.id == "" {
			t.Fatalf("event %d: %q id %q", i, ev.event, ev.id)
		}
		st = decodeStatus(t, ev)
		if st.ChunkDetailsFrom != next {
			t.Fatalf("event %d (%s): chunk_details_from %d, want %d", i, ev.id, st.ChunkDetailsFrom, next)
		}
		for _, ch := range st.ChunkDetails {
			if ch.Seq != next {
				t.Fatalf("event %d (%s): chunk %d, want %d (a chunk sent twice or skipped)", i, ev.id, ch.Seq, next)
			}
			next++
		}
		if next != st.Chunks {
			t.Fatalf("event %d (%s): %d chunks sent in all, the job has %d", i, ev.id, next, st.Chunks)
		}
	}
	if !st.Terminal() || st.Status.Status != "succeeded" {
		t.Fatalf("the last status event: %s", st.Status.Status)
	}
	end := events[len(events)-1]
	var e api.StreamEnd
	if err := json.Unmarshal([]byte(end.data), &e); err != nil || end.event != "end" || end.id != "" ||
		e.Status != st.Status.Status || e.Chunks != st.Chunks || e.ID != st.ID {
		t.Fatalf("the last event: %+v (%+v, %v)", end, e, err)
	}
	return st
}

func decodeStatus(t *testing.T, ev sseEvent) api.StreamStatus {
	t.Helper()
	var st api.StreamStatus
	if err := json.Unmarshal([]byte(ev.data), &st); err != nil {
		t.Fatalf("event %s: %v", ev.id, err)
	}
	return st
}

// firstChunks is the chunk count of a stream's first event.
func firstChunks(t *testing.T, events []sseEvent) int {
	t.Helper()
	return decodeStatus(t, events[0]).Chunks
}
