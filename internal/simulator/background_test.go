package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// testClock is a Config.Now that moves only when the test says.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newBackgroundServer starts a simulator on clock (nil: the wall clock)
// and returns it with an openai-go client set up as production sets it up.
func newBackgroundServer(t *testing.T, cfg Config, clock *testClock) (*Server, openai.Client, string) {
	t.Helper()
	if clock != nil {
		cfg.Now = clock.Now
	}
	sim := New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	return sim, client, srv.URL
}

// backgroundParams is a create request in background mode, as the worker
// sends it; prev continues a response.
func backgroundParams(prompt, prev string, maxTokens int64) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model:           "gpt-4o-mini",
		MaxOutputTokens: openai.Int(maxTokens),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
		Background:      openai.Bool(true),
		Store:           openai.Bool(true),
	}
	if prev != "" {
		p.PreviousResponseID = openai.String(prev)
	}
	return p
}

// apiStatus is the HTTP status of an openai-go error (0 for another
// error) and the API's message.
func apiStatus(err error) (int, string) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode, apiErr.Message
	}
	return 0, ""
}

// A background response answers at once, queued, and then goes through
// in_progress to the very end a synchronous call with the same request
// reaches: same status, text, reasons and usage, all withheld until then.
func TestBackgroundLifecycle(t *testing.T) {
	t.Parallel()
	const latency = 20 * time.Second
	tests := []struct {
		name, prompt string
		maxTokens    int64
		status       responses.ResponseStatus
		reason       string
	}{
		{"completed", "[[sim format=csv size=300 seed=4]]", 4096, "completed", ""},
		{"max tokens", "[[sim format=csv size=3000 seed=4]]", 64, "incomplete", "max_output_tokens"},
		{"content filter", "[[sim format=text size=3000 faults=content_filter@0]]", 64, "incomplete", "content_filter"},
		{"failed", "[[sim faults=failed@0]]", 64, "failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := newTestClock()
			sim, client, _ := newBackgroundServer(t, Config{Latency: latency}, clock)
			_, syncClient, _ := newBackgroundServer(t, Config{}, nil)
			want, err := newResponse(ctx, syncClient, tt.prompt, "", tt.maxTokens)
			if err != nil {
				t.Fatal(err)
			}
			if want.Status != tt.status || want.IncompleteDetails.Reason != tt.reason {
				t.Fatalf("synchronous call: %s %q", want.Status, want.IncompleteDetails.Reason)
			}

			began := time.Now()
			created, err := client.Responses.New(ctx, backgroundParams(tt.prompt, "", tt.maxTokens))
			if err != nil {
				t.Fatal(err)
			}
			if time.Since(began) > latency/4 {
				t.Fatalf("the create took %s: it waited for the model", time.Since(began))
			}
			if created.Status != "queued" || !created.Background || len(created.Output) != 0 ||
				created.JSON.Usage.Raw() != "null" || created.JSON.CompletedAt.Raw() != "null" {
				t.Fatalf("create answered %s background=%v output=%d usage=%s", created.Status, created.Background,
					len(created.Output), created.JSON.Usage.Raw())
			}
			steps := []struct {
				advance time.Duration
				status  responses.ResponseStatus
			}{
				{0, "queued"},
				{time.Second, "in_progress"},
				{latency - 2*time.Second, "in_progress"},
				{time.Second, tt.status},
			}
			for i, step := range steps {
				clock.Advance(step.advance)
				got, err := client.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
				if err != nil {
					t.Fatalf("poll %d: %v", i, err)
				}
				if got.Status != step.status {
					t.Fatalf("poll %d: status %s, want %s", i, got.Status, step.status)
				}
				if step.status == "queued" || step.status == "in_progress" {
					if len(got.Output) != 0 || got.JSON.Usage.Raw() != "null" || got.OutputText() != "" {
						t.Fatalf("poll %d: a %s response shows its output or usage", i, got.Status)
					}
					continue
				}
				sameEnd(t, got, want, latency)
			}
			st := sim.BackgroundStats()
			if st.Created != 1 || st.Polls != 4 || st.InFlight != 0 {
				t.Fatalf("stats %+v", st)
			}
			calls := sim.Calls("")
			if len(calls) != 1 || !calls[0].Background || calls[0].ResponseID != created.ID || calls[0].OutputTokens != int(want.Usage.OutputTokens) {
				t.Fatalf("call log %+v", calls)
			}
		})
	}
}

// sameEnd checks that a background response ended as the synchronous
// call with the same request did, after latency.
func sameEnd(t *testing.T, got, want *responses.Response, latency time.Duration) {
	t.Helper()
	if got.Status != want.Status || got.OutputText() != want.OutputText() || got.IncompleteDetails.Reason != want.IncompleteDetails.Reason ||
		got.Usage.OutputTokens != want.Usage.OutputTokens || got.Usage.InputTokens != want.Usage.InputTokens ||
		got.Error.Code != want.Error.Code {
		t.Fatalf("ended %s (%q, %d tokens); the synchronous call %s (%q, %d tokens)", got.Status, got.IncompleteDetails.Reason,
			got.Usage.OutputTokens, want.Status, want.IncompleteDetails.Reason, want.Usage.OutputTokens)
	}
	if took := got.CompletedAt - got.CreatedAt; took < latency.Seconds() || took > latency.Seconds()+0.01 {
		t.Fatalf("completed_at - created_at = %.3fs, want the latency %s", took, latency)
	}
}

// A background response's continuation is refused while it runs, and
// works as a synchronous one's once it has ended: a chain of background
// calls reassembles the document.
func TestBackgroundContinuation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newTestClock()
	sim, client, _ := newBackgroundServer(t, Config{Latency: 5 * time.Second}, clock)
	prompt := "[[sim format=jsonl size=1500 seed=9 tag=chain]]"
	doc, _, _ := DocumentFor(prompt)

	var text strings.Builder
	prev := ""
	for i := 0; ; i++ {
		input := prompt
		if prev != "" {
			input = "Continue exactly where you stopped."
		}
		r, err := client.Responses.New(ctx, backgroundParams(input, prev, 100))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		clock.Advance(2 * time.Second)
		_, err = client.Responses.New(ctx, backgroundParams("Continue.", r.ID, 100))
		if apiErr := (*openai.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "previous_response_id" {
			t.Fatalf("continuing a response in progress: %v, want a 400 naming previous_response_id", err)
		}
		clock.Advance(3 * time.Second)
		if r, err = client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
		text.WriteString(r.OutputText())
		if r.Status == "completed" {
			break
		}
		if r.Status != "incomplete" || i > 100 {
			t.Fatalf("call %d: %s", i, r.Status)
		}
		prev = r.ID
	}
	if text.String() != doc {
		t.Fatalf("the background chain reassembled %d bytes, the document has %d", text.Len(), len(doc))
	}
	if got, want := sim.BackgroundStats().Created, int64(len(sim.Calls("chain"))); got != want {
		t.Fatalf("%d background responses created, %d calls logged", got, want)
	}
}

// A cancel stops a running background response with the usage up to then
// and the text written so far; it can be repeated, it leaves an ended
// response as it is, and the conversation continues from what was written.
func TestBackgroundCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const latency = 10 * time.Second
	clock := newTestClock()
	sim, client, _ := newBackgroundServer(t, Config{Latency: latency}, clock)
	prompt := "[[sim format=text size=5000 seed=2]]"
	doc, _, _ := DocumentFor(prompt)

	r, err := client.Responses.New(ctx, backgroundParams(prompt, "", 400))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(500*time.Millisecond + (latency-500*time.Millisecond)/4) // a quarter of the way through the generation
	c, err := client.Responses.Cancel(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != "cancelled" || c.Usage.InputTokens == 0 || c.Usage.OutputTokens != 100 ||
		c.Usage.TotalTokens != c.Usage.InputTokens+c.Usage.OutputTokens {
		t.Fatalf("cancel: %s, usage %+v; want cancelled, input billed, 100 of 400 output tokens", c.Status, c.Usage)
	}
	partial := c.OutputText()
	if partial == "" || !strings.HasPrefix(doc, partial) || len(partial) > 100*4 {
		t.Fatalf("cancelled output %q is not the document's first quarter", partial)
	}

	clock.Advance(latency) // the response would have ended by now
	for _, again := range []func() (*responses.Response, error){
		func() (*responses.Response, error) { return client.Responses.Cancel(ctx, r.ID) },
		func() (*responses.Response, error) {
			return client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
		},
	} {
		got, err := again()
		if err != nil || got.Status != "cancelled" || got.Usage.OutputTokens != c.Usage.OutputTokens || got.OutputText() != partial {
			t.Fatalf("after the cancel: %v %+v", err, got)
		}
	}
	if n := sim.BackgroundStats().Cancelled; n != 1 {
		t.Fatalf("%d cancels counted, want 1", n)
	}

	// The conversation goes on after what the cancelled response wrote.
	next, err := client.Responses.New(ctx, backgroundParams("Continue exactly where you stopped.", r.ID, 100))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(latency)
	done, err := client.Responses.Cancel(ctx, next.ID) // it has ended: the cancel returns it unchanged
	if err != nil || done.Status != "incomplete" || !strings.HasPrefix(doc, partial+done.OutputText()) {
		t.Fatalf("continuation of the cancelled response: %v %s %q", err, done.Status, done.OutputText())
	}
	if n := sim.BackgroundStats().Cancelled; n != 1 {
		t.Fatalf("%d cancels counted, want 1", n)
	}
}

// A stream of a cancelled response carries what the response wrote before
// the cancel, and ends there, with no terminal event: the deltas make the
// cancelled response's text. A stream waiting for its next event ends at
// the cancel.
func TestBackgroundStreamOfCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const latency = 10 * time.Second
	clock := newTestClock()
	_, client, _ := newBackgroundServer(t, Config{Latency: latency}, clock)
	live := client.Responses.NewStreaming(ctx, backgroundParams("[[sim size=5000 seed=8]]", "", 400))
	var a collected
	cancelled := make(chan *responses.Response, 1)
	a.read(t, live, func(ev responses.ResponseStreamEventUnion) bool {
		if ev.Type == "response.queued" {
			clock.Advance(latency / 2)
			go func() { // once the stream has caught up with the clock
				time.Sleep(100 * time.Millisecond)
				c, err := client.Responses.Cancel(ctx, ev.Response.ID)
				if err != nil {
					t.Error(err)
				}
				cancelled <- c
			}()
		}
		return false
	})
	c := <-cancelled
	if c == nil || c.Status != "cancelled" || a.final.Type != "response.output_text.delta" || a.deltas.String() != c.OutputText() {
		t.Fatalf("the live stream ended with %s after %d bytes; the cancelled response has %d", a.final.Type,
			a.deltas.Len(), len(c.OutputText()))
	}
	clock.Advance(latency)
	var b collected
	b.read(t, client.Responses.GetStreaming(ctx, c.ID, responses.ResponseGetParams{}), nil)
	if b.final.Type != "response.output_text.delta" || b.deltas.String() != c.OutputText() {
		t.Fatalf("the stream of the cancelled response ended with %s after %d bytes", b.final.Type, b.deltas.Len())
	}
}

// Retention: a background response is gone (404, as an unknown id) once it
// has been kept BackgroundRetention after its end, and so is its
// conversation.
func TestBackgroundExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newTestClock()
	sim, client, base := newBackgroundServer(t, Config{Latency: time.Second, BackgroundRetention: time.Minute}, clock)
	r, err := client.Responses.New(ctx, backgroundParams("[[sim size=100]]", "", 4096))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second + time.Minute)
	if got, err := client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil || got.Status != "completed" {
		t.Fatalf("within retention: %v %+v", err, got)
	}
	clock.Advance(time.Millisecond)
	_, err = client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if code, msg := apiStatus(err); code != http.StatusNotFound || msg != "No response found with id '"+r.ID+"'." {
		t.Fatalf("GET after retention: %v", err)
	}
	if _, err := client.Responses.Cancel(ctx, r.ID); !is(err, http.StatusNotFound) {
		t.Fatalf("cancel after retention: %v", err)
	}
	if code, _ := getStream(t, base, r.ID, "stream=true"); code != http.StatusNotFound {
		t.Fatalf("stream after retention: %d", code)
	}
	if _, err := client.Responses.New(ctx, backgroundParams("Continue.", r.ID, 64)); !is(err, http.StatusNotFound) {
		t.Fatalf("continuation after retention: %v", err)
	}
	if st := sim.BackgroundStats(); st.Expired != 3 || st.Polls != 1 {
		t.Fatalf("stats %+v, want 3 expired and 1 poll", st)
	}
}

// is reports whether err is an API error with status code.
func is(err error, code int) bool {
	got, _ := apiStatus(err)
	return got == code
}

// getStream GETs a response's stream with query and returns the status
// and body.
func getStream(t *testing.T, base, id, query string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/v1/responses/"+id+"?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// collected is what a client read of a Responses stream.
type collected struct {
	seqs   []int64
	types  []string
	deltas strings.Builder
	final  responses.ResponseStreamEventUnion
}

// read reads stream until it ends, or until stop says so.
func (c *collected) read(t *testing.T, stream interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}, stop func(ev responses.ResponseStreamEventUnion) bool) {
	t.Helper()
	for stream.Next() {
		ev := stream.Current()
		c.seqs, c.types = append(c.seqs, ev.SequenceNumber), append(c.types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			c.deltas.WriteString(ev.Delta)
		}
		c.final = ev
		if stop != nil && stop(ev) {
			return
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
}

// A background stream dropped midway resumes with starting_after: the GET
// sends only the later events, and the deltas of both make the text.
func TestBackgroundStreamResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const latency = 10 * time.Second
	clock := newTestClock()
	sim, client, base := newBackgroundServer(t, Config{Latency: latency}, clock)
	prompt := "[[sim format=markdown size=3000 seed=5]]"

	first := client.Responses.NewStreaming(ctx, backgroundParams(prompt, "", 300))
	var a collected
	id := ""
	a.read(t, first, func(ev responses.ResponseStreamEventUnion) bool {
		if ev.Type == "response.queued" {
			id = ev.Response.ID
			clock.Advance(latency / 2) // the rest of the stream comes as the clock reaches it
		}
		return ev.Type == "response.output_text.delta" && a.deltas.Len() >= 200
	})
	first.Close() // the connection drops
	if id == "" || strings.Join(a.types[:3], " ") != "response.created response.queued response.in_progress" {
		t.Fatalf("the stream opened with %v", a.types)
	}
	last := a.seqs[len(a.seqs)-1]

	clock.Advance(latency)
	rest := client.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: openai.Int(last)})
	var b collected
	b.read(t, rest, nil)
	for i, seq := range b.seqs {
		if seq != last+1+int64(i) {
			t.Fatalf("resumed stream's event %d has sequence_number %d, want %d", i, seq, last+1+int64(i))
		}
	}
	got, err := client.Responses.Get(ctx, id, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if b.final.Type != "response.incomplete" || a.deltas.String()+b.deltas.String() != got.OutputText() {
		t.Fatalf("resumed stream ended with %s; the deltas make %d bytes of the %d of the text", b.final.Type,
			a.deltas.Len()+b.deltas.Len(), len(got.OutputText()))
	}

	// From the start when starting_after is absent.
	var all collected
	all.read(t, client.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{}), nil)
	if all.seqs[0] != 0 || all.deltas.String() != got.OutputText() {
		t.Fatalf("the whole stream starts at %d and carries %d bytes", all.seqs[0], all.deltas.Len())
	}
	if code, _ := getStream(t, base, id, "stream=true&starting_after=x"); code != http.StatusBadRequest {
		t.Fatalf("starting_after=x: %d", code)
	}
	if st := sim.BackgroundStats(); st.StreamResumes != 2 || st.Polls != 1 {
		t.Fatalf("stats %+v, want 2 stream resumes and 1 poll", st)
	}
}

// On the wall clock a background stream is paced: the text comes over the
// latency, not at once.
func TestBackgroundStreamPacing(t *testing.T) {
	t.Parallel()
	const latency = 400 * time.Millisecond
	_, client, _ := newBackgroundServer(t, Config{Latency: latency}, nil)
	began := time.Now()
	var firstDelta time.Duration
	var c collected
	c.read(t, client.Responses.NewStreaming(context.Background(), backgroundParams("[[sim size=2000]]", "", 200)),
		func(ev responses.ResponseStreamEventUnion) bool {
			if ev.Type == "response.output_text.delta" && firstDelta == 0 {
				firstDelta = time.Since(began)
			}
			return false
		})
	took := time.Since(began)
	if firstDelta < latency/10 || firstDelta > latency/2 || took < latency || c.final.Type != "response.incomplete" {
		t.Fatalf("first delta after %s, the end (%s) after %s; want the text spread over %s", firstDelta, c.final.Type, took, latency)
	}
}

// A break or malformed fault spoils the create's reply, not the response:
// it is created, runs to its end, and a resumed stream or a poll has all
// of it.
func TestBackgroundFaultsSpoilOnlyTheReply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newTestClock()
	sim, client, _ := newBackgroundServer(t, Config{Latency: time.Second}, clock)

	stream := client.Responses.NewStreaming(ctx, backgroundParams("[[sim size=2000 faults=break@0 tag=broken]]", "", 200))
	var a collected
	clock.Advance(2 * time.Second) // past the response's end: the stream goes as far as the break at once
	for stream.Next() {
		ev := stream.Current()
		a.seqs = append(a.seqs, ev.SequenceNumber)
		if ev.Type == "response.output_text.delta" {
			a.deltas.WriteString(ev.Delta)
		}
		if ev.Type == "response.created" {
			a.final = ev
		}
	}
	if stream.Err() == nil || a.deltas.Len() == 0 {
		t.Fatalf("the broken stream ended cleanly (%v) or carried no text", stream.Err())
	}
	id := a.final.Response.ID
	var b collected
	b.read(t, client.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: openai.Int(a.seqs[len(a.seqs)-1])}), nil)
	got, err := client.Responses.Get(ctx, id, responses.ResponseGetParams{})
	if err != nil || a.deltas.String()+b.deltas.String() != got.OutputText() || b.final.Type != "response.incomplete" {
		t.Fatalf("resumed after the break: %v; %s", err, b.final.Type)
	}

	_, err = client.Responses.New(ctx, backgroundParams("[[sim size=2000 faults=break@0 tag=dropped]]", "", 200))
	if err == nil {
		t.Fatal("a break on a background create was answered")
	}
	calls := sim.Calls("dropped")
	if len(calls) != 1 || calls[0].Outcome != FaultBreak || sim.BackgroundStats().Created != 2 {
		t.Fatalf("calls %+v, stats %+v: the dropped create's response was not created", calls, sim.BackgroundStats())
	}
	if got, err := client.Responses.Get(ctx, calls[0].ResponseID, responses.ResponseGetParams{}); err != nil || got.Status != "queued" {
		t.Fatalf("the response whose create was dropped: %v", err)
	}
}

// What the API refuses is refused: a create it refuses or fails answers
// with the error and creates nothing; only a background response can be
// cancelled, and only one created streaming can be streamed.
func TestBackgroundRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sim, client, base := newBackgroundServer(t, Config{}, newTestClock())
	notStored := backgroundParams("[[sim]]", "", 10)
	notStored.Store = openai.Bool(false)
	tests := []struct {
		name   string
		params responses.ResponseNewParams
		status int
		param  string
	}{
		{"not stored", notStored, http.StatusBadRequest, "background"},
		{"server error", backgroundParams("[[sim faults=500@0]]", "", 10), http.StatusInternalServerError, ""},
		{"rate limited", backgroundParams("[[sim faults=429@0]]", "", 10), http.StatusTooManyRequests, ""},
		{"unknown previous", backgroundParams("Continue.", "resp_nope", 10), http.StatusNotFound, "previous_response_id"},
	}
	for _, tt := range tests {
		_, err := client.Responses.New(ctx, tt.params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Param != tt.param {
			t.Errorf("create, %s: %v, want %d with param %q", tt.name, err, tt.status, tt.param)
		}
	}
	if st := sim.BackgroundStats(); st.Created != 0 {
		t.Fatalf("stats %+v: refused creates created responses", st)
	}

	unset := backgroundParams("[[sim]]", "", 10) // store left to the API's default, true
	unset.Store = param.Opt[bool]{}
	polled, err := client.Responses.New(ctx, unset)
	if err != nil || polled.Status != "queued" {
		t.Fatalf("store left unset: %v", err)
	}
	plain, err := newResponse(ctx, client, "[[sim]]", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Responses.Cancel(ctx, plain.ID)
	if code, msg := apiStatus(err); code != http.StatusBadRequest || msg != "Only background responses can be cancelled." {
		t.Errorf("cancel of a synchronous response: %v", err)
	}
	if _, err := client.Responses.Cancel(ctx, "resp_unknown"); !is(err, http.StatusNotFound) {
		t.Errorf("cancel of an unknown id: %v", err)
	}
	for _, id := range []string{polled.ID, plain.ID} {
		if code, body := getStream(t, base, id, "stream=true"); code != http.StatusBadRequest || !strings.Contains(body, `"param":"stream"`) {
			t.Errorf("stream of %s: %d %s", id, code, body)
		}
	}
	if st := sim.BackgroundStats(); st.Created != 1 || st.StreamResumes != 0 || st.Cancelled != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The benchmark keeps ten thousand background responses in flight: creates
// and polls answer at once, whatever the latency, and the counters add up.
func TestBackgroundManyInFlight(t *testing.T) {
	t.Parallel()
	n := 10000
	if testing.Short() {
		n = 1000
	}
	const latency = time.Minute
	clock := newTestClock()
	sim, client, base := newBackgroundServer(t, Config{Latency: latency}, clock)
	ctx := context.Background()
	ids := make([]string, n)
	each := func(f func(i int) error) { inParallel(t, n, f) }
	poll := func(want responses.ResponseStatus) func(i int) error {
		return func(i int) error {
			r, err := client.Responses.Get(ctx, ids[i], responses.ResponseGetParams{})
			if err == nil && r.Status != want {
				err = errors.New("response " + ids[i] + " is " + string(r.Status) + ", want " + string(want))
			}
			return err
		}
	}

	began := time.Now()
	each(func(i int) error {
		r, err := client.Responses.New(ctx, backgroundParams("[[sim size=200 seed="+strconv.Itoa(i)+"]]", "", 4096))
		if err == nil {
			ids[i] = r.ID
		}
		return err
	})
	if st := sim.BackgroundStats(); st.Created != int64(n) || st.InFlight != int64(n) {
		t.Fatalf("stats %+v after %d creates", st, n)
	}
	clock.Advance(latency / 2)
	each(poll("in_progress"))
	clock.Advance(latency / 2)
	each(poll("completed"))
	took := time.Since(began)
	t.Logf("%d background responses created and polled twice in %s", n, took)
	// Under the response latency, however loaded the machine: a simulator
	// that waited out the latency in real time would take at least that.
	if took >= latency {
		t.Fatalf("%d creates and polls took %s: the simulator waited the latency out", n, took)
	}

	if _, err := client.Responses.New(ctx, backgroundParams("[[sim]]", "", 10)); err != nil {
		t.Fatal(err)
	}
	sim.mu.Lock()
	booked := len(sim.bg.live)
	sim.mu.Unlock()
	if booked != 1 {
		t.Fatalf("%d deadlines booked with one response in flight: ended ones are kept", booked)
	}

	st := simStats(t, base)
	want := map[string]int64{"created": int64(n) + 1, "polls": 2 * int64(n), "stream_resumes": 0, "cancelled": 0, "expired": 0, "in_flight": 1,
		"model_calls": 0, "rate_limited": 0, "rate_tokens": 0}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("/sim/stats %s = %d, want %d (%v)", k, st[k], v, st)
		}
	}
	if len(st) != len(want) {
		t.Errorf("/sim/stats has keys %v", st)
	}
}

// inParallel calls f for 0 ... n-1 from 16 goroutines, and fails the test
// on the first error.
func inParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// simStats reads GET /sim/stats, as a benchmark running the simulator in
// another process does (no key needed).
func simStats(t *testing.T, base string) map[string]int64 {
	t.Helper()
	res, err := http.Get(base + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st map[string]int64
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// HoldCreates holds a create's answer until released.
func TestHoldCreates(t *testing.T) {
	t.Parallel()
	sim, client, _ := newBackgroundServer(t, Config{}, nil)
	release := sim.HoldCreates()
	done := make(chan error, 1)
	go func() {
		_, err := client.Responses.New(context.Background(), backgroundParams("[[sim]]", "", 10))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a create was answered while held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	release() // a second release is harmless
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
