package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/carryover/carryover/internal/store"
)

// costs are numeric(18,8) literals; "" is NULL (no price).
type costs []string

// mergeCase is a merging job: its chunks' costs and its failed attempts.
type mergeCase struct {
	name     string
	chunks   costs
	failures costs // failed attempts with usage (and these costs)
	lost     int   // attempts lost with their worker (no usage)
	save     bool  // within numeric(18,8) when summed: SaveResult can store it
}

var mergeCases = []mergeCase{
	{name: "unpriced", chunks: costs{"", "", ""}, save: true},
	{name: "priced", chunks: costs{"0.1", "0.2", "0.3", "0.00000001", "0.00001234"}, save: true},
	{name: "priced failures only", chunks: costs{"", ""}, failures: costs{"0.00012345", ""}, lost: 1, save: true},
	{name: "mixed", chunks: costs{"0.00250000", "", "1.23456789"}, failures: costs{"", "0.5"}, lost: 2, save: true},
	{name: "no chunks", save: true},
	// Beyond 2^53 units a float no longer holds a cost exactly; the total
	// as a float overflows job_results.cost_usd, so it is only read.
	{name: "huge", chunks: costs{"9999999999.99999999", "-9999999999.99999997", "9999999999.99999993"}, failures: costs{"0.00000003"}},
}

// makeMergingJob stores c's chunks and attempts for a new job and moves it
// to merging, as the last chunk's save would.
func makeMergingJob(t *testing.T, s *store.Store, c mergeCase) string {
	t.Helper()
	ctx := context.Background()
	id := newJob(t, s)
	for seq, cost := range c.chunks {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO chunks (job_id, seq, content, content_sha, finish_reason, raw_status,
	response_id, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost_usd, latency_ms, call_started_at,
	should_continue, decision, prompt)
VALUES ($1::uuid, $2::int, 'text ' || $2::int, 'sha', 'length', 'incomplete', 'resp_' || $2::int, 100 + $2::int, 10 * $2::int, 64,
	$2::int, nullif($3, '')::numeric, 7 * $2::int, now(), true, '{"resolved_by": "finish_reason"}', 'go on')`, id, seq, cost); err != nil {
			t.Fatal(err)
		}
	}
	for i, cost := range c.failures {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO call_failures (job_id, seq, attempt, status, error_type, input_tokens,
	cached_tokens, output_tokens, reasoning_tokens, cost_usd)
VALUES ($1::uuid, 0, $2, 'failed', 'model', 50, 5, 3, 1, nullif($3, '')::numeric)`, id, i, cost); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.lost {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO call_failures (job_id, seq, task_id, attempt, status, error_type, error, request_sent)
VALUES ($1::uuid, 0, 'task', $2, 'lost', 'unknown', 'sent, no outcome', true)`, id, 100+i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE jobs SET status = 'merging', stop_reason = 'completed' WHERE id = $1::uuid`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// LoadMerge reads in one round trip exactly what the separate reads and
// the llm_calls view give, chunk costs and total cost to the last bit.
func TestLoadMergeMatchesSeparateReads(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	for _, c := range mergeCases {
		t.Run(c.name, func(t *testing.T) {
			id := makeMergingJob(t, s, c)
			in, err := s.LoadMerge(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			job, err := s.GetJob(ctx, id)
			if err != nil || !reflect.DeepEqual(in.Job, job) {
				t.Errorf("job:\n got %+v\nwant %+v (%v)", in.Job, job, err)
			}
			calls, err := s.CallStats(ctx, id)
			if err != nil || in.Calls != calls {
				t.Errorf("calls: got %+v, want %+v (%v)", in.Calls, calls, err)
			}
			usage, cost, err := s.Totals(ctx, id)
			if err != nil || in.Totals.Usage != usage || !sameFloat(in.Totals.Cost(), cost) || in.Totals.Chunks != len(c.chunks) {
				t.Errorf("totals: got %+v cost %v, want %+v cost %v over %d chunks (%v)",
					in.Totals, deref(in.Totals.Cost()), usage, deref(cost), len(c.chunks), err)
			}
			chunks, err := s.Chunks(ctx, id, store.ChunkTexts)
			if err != nil || !reflect.DeepEqual(in.Chunks, chunks) {
				t.Errorf("chunks differ from Chunks(ChunkTexts) (%v)", err)
			}
			rows, err := s.Pool().Query(ctx, `SELECT cost_usd::float8 FROM chunks WHERE job_id = $1::uuid ORDER BY seq`, id)
			if err != nil {
				t.Fatal(err)
			}
			var want []*float64
			for rows.Next() {
				var f *float64
				if err := rows.Scan(&f); err != nil {
					t.Fatal(err)
				}
				want = append(want, f)
			}
			for i, ch := range in.Chunks {
				if !sameFloat(ch.CostUSD, want[i]) {
					t.Errorf("chunk %d cost: got %v, want %v", i, deref(ch.CostUSD), deref(want[i]))
				}
			}
		})
	}
}

// SaveResult writes the totals LoadMerge read, equal to the llm_calls sums
// it used to make itself, and a repeated save changes nothing.
func TestSaveResultTotals(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	for _, c := range mergeCases {
		if !c.save {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			id := makeMergingJob(t, s, c)
			in, err := s.LoadMerge(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			r := store.Result{JobID: id, Content: "merged", Metadata: []byte(`{"k": 1}`), CostUSD: in.Totals.Cost(), MergeSuccess: true}
			if err := s.SaveResult(ctx, r, store.StatusSucceeded, "", in.Totals); err != nil {
				t.Fatal(err)
			}
			const totals = `SELECT j.status, j.chunk_count = (SELECT count(*) FROM chunks WHERE job_id = j.id) AND
	(j.input_tokens, j.cached_tokens, j.output_tokens, j.reasoning_tokens) = (SELECT coalesce(sum(input_tokens), 0),
		coalesce(sum(cached_tokens), 0), coalesce(sum(output_tokens), 0), coalesce(sum(reasoning_tokens), 0) FROM llm_calls WHERE job_id = j.id)
	AND j.cost_usd IS NOT DISTINCT FROM (SELECT CASE WHEN bool_or(cost_usd IS NOT NULL) THEN sum(cost_usd) END FROM llm_calls WHERE job_id = j.id),
	(SELECT count(*) FROM job_events WHERE job_id = j.id AND type = 'status' AND message = 'succeeded'),
	(SELECT row(r.content, r.metadata, r.cost_usd, r.merge_success, r.merge_error)::text FROM job_results r WHERE r.job_id = j.id)
FROM jobs j WHERE j.id = $1::uuid`
			var (
				status, row string
				same        bool
				events      int
			)
			if err := s.Pool().QueryRow(ctx, totals, id).Scan(&status, &same, &events, &row); err != nil {
				t.Fatal(err)
			}
			if status != store.StatusSucceeded || !same || events != 1 {
				t.Fatalf("after the save: status %s, totals as llm_calls sums them: %v, %d status events", status, same, events)
			}
			// A redelivered merge finds the job no longer merging: the
			// result is written again, the same; the job is left alone.
			if err := s.SaveResult(ctx, r, store.StatusSucceeded, "", in.Totals); err != nil {
				t.Fatal(err)
			}
			var status2, row2 string
			if err := s.Pool().QueryRow(ctx, totals, id).Scan(&status2, &same, &events, &row2); err != nil {
				t.Fatal(err)
			}
			if status2 != status || !same || events != 1 || row2 != row {
				t.Fatalf("after a second save: status %s, totals same %v, %d status events, result %s (was %s)", status2, same, events, row2, row)
			}
		})
	}
}

// A total beyond int64 units (and so beyond jobs.cost_usd) is an error, as
// summing it in Postgres made SaveResult fail.
func TestLoadMergeCostOverflow(t *testing.T) {
	t.Parallel()
	s := open(t)
	c := mergeCase{chunks: make(costs, 10)}
	for i := range c.chunks {
		c.chunks[i] = "9999999999.99999999"
	}
	if _, err := s.LoadMerge(context.Background(), makeMergingJob(t, s, c)); err == nil {
		t.Fatal("no error for a total cost beyond int64")
	}
}

func TestLoadMergeNoJob(t *testing.T) {
	t.Parallel()
	s := open(t)
	if _, err := s.LoadMerge(context.Background(), uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

func sameFloat(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
