package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ListQuery selects a page of a tenant's jobs, newest first.
type ListQuery struct {
	Tenant string
	// Statuses keeps only jobs in one of them; none keeps every job.
	Statuses []string
	// Limit is the page's size.
	Limit int
	// AfterCreated and AfterID continue a listing after this job (the last
	// of the previous page); a zero AfterCreated starts from the newest.
	AfterCreated time.Time
	AfterID      string
}

// ListedJob is a job of a listing, with the number of chunks it has stored.
type ListedJob struct {
	Job
	Chunks int
}

// ListJobs returns a page of a tenant's jobs, newest first (created_at,
// then id, both descending: a keyset that the jobs_tenant_*created_idx
// indexes serve as a range scan, and that a job created meanwhile does not
// shift).
func (s *Store) ListJobs(ctx context.Context, q ListQuery) ([]ListedJob, error) {
	where := []string{"tenant_id = $1"}
	args := []any{q.Tenant}
	if len(q.Statuses) == 1 {
		args = append(args, q.Statuses[0])
		where = append(where, "status = $"+strconv.Itoa(len(args)))
	} else if len(q.Statuses) > 1 {
		args = append(args, q.Statuses)
		where = append(where, "status = ANY($"+strconv.Itoa(len(args))+")")
	}
	if !q.AfterCreated.IsZero() {
		args = append(args, q.AfterCreated, q.AfterID)
		where = append(where, fmt.Sprintf("(created_at, id) < ($%d, $%d::uuid)", len(args)-1, len(args)))
	}
	args = append(args, q.Limit)
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+`, (SELECT count(*) FROM chunks c WHERE c.job_id = jobs.id)
FROM jobs WHERE `+strings.Join(where, " AND ")+`
ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("store: list jobs of tenant %s: %w", q.Tenant, err)
	}
	defer rows.Close()
	var out []ListedJob
	for rows.Next() {
		var j ListedJob
		if err := rows.Scan(append(jobDest(&j.Job), &j.Chunks)...); err != nil {
			return nil, fmt.Errorf("store: list jobs of tenant %s: %w", q.Tenant, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list jobs of tenant %s: %w", q.Tenant, err)
	}
	return out, nil
}
