package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// MergeInput is everything a job's merge reads.
type MergeInput struct {
	Job    Job
	Chunks []Chunk // in order, with their text (ChunkTexts)
	Calls  CallStats
	// Totals are over every attempt (the llm_calls view): the chunks, and
	// the failed calls that reported usage, which were billed too.
	Totals JobTotals
}

// JobTotals are a job's totals over its model calls, as SaveResult writes
// them to the job.
type JobTotals struct {
	Chunks   int
	Usage    Usage
	cost     pgtype.Int8 // usd8; not valid when no call has a cost
	overflow bool        // the cost is beyond int64 (and so beyond jobs.cost_usd)
}

// Cost is the total cost estimate, nil when no call has a price.
func (t JobTotals) Cost() *float64 {
	if !t.cost.Valid {
		return nil
	}
	f := usd8(t.cost.Int64).float()
	return &f
}

// add counts one call's usage and cost (cost not valid: no price) in t.
func (t *JobTotals) add(u Usage, cost pgtype.Int8) {
	t.Usage.Input += u.Input
	t.Usage.Cached += u.Cached
	t.Usage.Output += u.Output
	t.Usage.Reasoning += u.Reasoning
	if !cost.Valid {
		return
	}
	sum := t.cost.Int64 + cost.Int64
	t.overflow = t.overflow || (sum^t.cost.Int64)&(sum^cost.Int64) < 0
	t.cost = pgtype.Int8{Int64: sum, Valid: true}
}

// usd8 is an amount of USD as a numeric(18,8) column holds it: a whole
// number of 1e-8 USD. Its sums are exact, as Postgres's sums of numeric
// are, so totals made in Go from rows already read equal the ones Postgres
// would make from the same rows again. SQL reads a numeric as usd8 with
// (x * 100000000)::int8, and writes one back, exactly, as $n::int8 * 0.00000001.
type usd8 int64

// float is u as Postgres's numeric-to-float8 cast gives it: the float
// nearest the exact decimal. Up to 2^53 units the division is that (both
// operands are exact and IEEE division rounds correctly); beyond, the
// decimal is parsed, as Postgres itself does.
func (u usd8) float() float64 {
	if -1<<53 <= u && u <= 1<<53 {
		return float64(u) / 1e8
	}
	f, _ := strconv.ParseFloat(u.String(), 64)
	return f
}

// String is u as a decimal with eight places, as Postgres prints it.
func (u usd8) String() string {
	sign, n := "", uint64(u)
	if u < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%08d", sign, n/1e8, n%1e8)
}

// mergeJobSQL reads a job and what its failed attempts add to its totals:
// the llm_calls view is a job's chunks and its call_failures, and the
// chunks are read anyway, so only the failures (usually none) are summed.
const mergeJobSQL = `SELECT ` + jobColumns + `, f.failed, f.lost, f.input_sum, f.cached_sum, f.output_sum, f.reasoning_sum, f.cost_sum
FROM jobs CROSS JOIN LATERAL (
	SELECT count(*) FILTER (WHERE status = 'failed') AS failed, count(*) FILTER (WHERE status = 'lost') AS lost,
	       coalesce(sum(input_tokens), 0) AS input_sum, coalesce(sum(cached_tokens), 0) AS cached_sum,
	       coalesce(sum(output_tokens), 0) AS output_sum, coalesce(sum(reasoning_tokens), 0) AS reasoning_sum,
	       (sum(cost_usd) * 100000000)::int8 AS cost_sum
	FROM call_failures WHERE job_id = jobs.id
) f
WHERE jobs.id = $1::uuid`

// LoadMerge reads what a job's merge needs — the job, its chunks with their
// text, its call counts and totals — in one round trip, and sums the
// totals from the chunks it read rather than reading them again through
// the llm_calls view. It returns ErrNotFound when there is no such job.
func (s *Store) LoadMerge(ctx context.Context, jobID string) (MergeInput, error) {
	b := &pgx.Batch{}
	b.Queue(mergeJobSQL, jobID)
	b.Queue(chunksSQL(ChunkTexts), jobID)
	br := s.pool.SendBatch(ctx, b)
	in, failed, err := readMerge(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return MergeInput{}, ErrNotFound
	}
	if err != nil {
		return MergeInput{}, fmt.Errorf("store: read job %s for its merge: %w", jobID, err)
	}
	in.addFailures(failed)
	if in.Totals.overflow {
		return MergeInput{}, fmt.Errorf("store: read job %s for its merge: its total cost overflows", jobID)
	}
	return in, nil
}

// failures is what a job's failed attempts add to its totals.
type failures struct {
	usage Usage
	cost  pgtype.Int8
}

// readMerge reads the results of LoadMerge's batch.
func readMerge(br pgx.BatchResults) (MergeInput, failures, error) {
	var (
		in MergeInput
		f  failures
	)
	dest := append(jobDest(&in.Job), &in.Calls.Failed, &in.Calls.Lost,
		&f.usage.Input, &f.usage.Cached, &f.usage.Output, &f.usage.Reasoning, &f.cost)
	if err := br.QueryRow().Scan(dest...); err != nil {
		return in, f, err
	}
	rows, err := br.Query()
	if err != nil {
		return in, f, err
	}
	in.Chunks, in.Totals, err = collectChunks(rows)
	return in, f, err
}

// addFailures completes the call counts and totals with the failed attempts.
func (in *MergeInput) addFailures(f failures) {
	in.Calls.Succeeded = len(in.Chunks)
	in.Calls.Total = in.Calls.Succeeded + in.Calls.Failed + in.Calls.Lost
	in.Totals.add(f.usage, f.cost)
}
