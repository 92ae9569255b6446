package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// Quota bounds what one tenant may have the service do. The operator sets
// it for every tenant; a tenant's row (tenants.max_jobs_in_flight,
// tenants.daily_spend_usd) overrides either for that tenant.
type Quota struct {
	// MaxJobsInFlight caps a tenant's jobs queued, running or merging;
	// UnlimitedJobs lifts the cap. It must be positive.
	MaxJobsInFlight int64
	// DailySpendUSD caps the estimated cost of a tenant's model calls
	// finished in the current UTC day; 0 sets no cap.
	DailySpendUSD float64
}

// UnlimitedJobs as Quota.MaxJobsInFlight sets no cap on jobs in flight.
const UnlimitedJobs = math.MaxInt64

// Quota names, as a QuotaError reports them.
const (
	QuotaJobsInFlight = "max_jobs_in_flight"
	QuotaDailySpend   = "daily_spend_usd"
)

// InFlightRetryAfter is what a caller refused for jobs in flight is told to
// wait: a slot frees when one of its jobs ends, which takes seconds to
// minutes.
const InFlightRetryAfter = 15 * time.Second

// QuotaError refuses a job because its tenant is at a quota; nothing was
// stored.
type QuotaError struct {
	Tenant     string
	Quota      string  // QuotaJobsInFlight or QuotaDailySpend
	Limit      float64 // the quota
	Used       float64 // what the tenant has in flight, or spent today
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	switch e.Quota {
	case QuotaDailySpend:
		return fmt.Sprintf("tenant %q spent $%.4f today, at its daily spend quota (%s) of $%.2f", e.Tenant, e.Used, e.Quota, e.Limit)
	default:
		return fmt.Sprintf("tenant %q has %.0f jobs in flight, at its quota (%s) of %.0f", e.Tenant, e.Used, e.Quota, e.Limit)
	}
}

// quotaLockClass namespaces the per-tenant advisory lock that makes the
// quota check and the insert one step ("qu").
const quotaLockClass int32 = 0x7175

// insertWithin inserts n as insertJob does, once the tenant's quota allows
// it. A request whose idempotency key names an existing job is not counted:
// the caller returns that job.
func insertWithin(ctx context.Context, db txBeginner, n NewJob, key *string, meta, opts any, job *Job) error {
	return underQuota(ctx, db, n.TenantID, *n.Quota, true, func(tx pgx.Tx) error {
		if key != nil {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE tenant_id = $1 AND idempotency_key = $2)`,
				n.TenantID, key).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return errIdempotentReplay
			}
		}
		return nil
	}, func(tx pgx.Tx) error {
		return insertJob(ctx, tx, n, key, meta, opts, job)
	})
}

// errIdempotentReplay skips the quota for a request that returns a job
// already accepted.
var errIdempotentReplay = pgx.ErrNoRows

type txBeginner interface {
	Begin(context.Context) (pgx.Tx, error)
}

// underQuota runs do in a transaction that holds the tenant's quota lock,
// once the tenant's jobs in flight (and, with spend, its spend today) are
// under its quota; a *QuotaError otherwise. The transaction-scoped advisory
// lock serializes the check and the change per tenant, so concurrent
// requests cannot together pass the quota; other tenants do not wait.
// before, when set, runs first under the lock; an error from it ends the
// transaction and is returned, the quota unchecked.
func underQuota(ctx context.Context, db txBeginner, tenant string, q Quota, spend bool,
	before, do func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, quotaLockClass, tenant); err != nil {
		return err
	}
	if before != nil {
		if err := before(tx); err != nil {
			return err
		}
	}
	var maxJobs *int64
	var spendCap *float64
	err = tx.QueryRow(ctx, `SELECT max_jobs_in_flight, daily_spend_usd::float8 FROM tenants WHERE id = $1`, tenant).
		Scan(&maxJobs, &spendCap)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrUnknownTenant
	}
	if err != nil {
		return err
	}
	if maxJobs != nil {
		q.MaxJobsInFlight = *maxJobs
	}
	if spendCap != nil {
		q.DailySpendUSD = *spendCap
	}
	if q.MaxJobsInFlight != UnlimitedJobs {
		var live int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE tenant_id = $1 AND status IN ('queued','running','merging')`,
			tenant).Scan(&live); err != nil {
			return err
		}
		if live >= q.MaxJobsInFlight {
			return &QuotaError{Tenant: tenant, Quota: QuotaJobsInFlight, Limit: float64(q.MaxJobsInFlight),
				Used: float64(live), RetryAfter: InFlightRetryAfter}
		}
	}
	if spend && q.DailySpendUSD > 0 {
		spent, dayEnd, err := spentToday(ctx, tx, tenant)
		if err != nil {
			return err
		}
		if spent >= q.DailySpendUSD {
			return &QuotaError{Tenant: tenant, Quota: QuotaDailySpend, Limit: q.DailySpendUSD, Used: spent,
				RetryAfter: time.Until(dayEnd)}
		}
	}
	if err := do(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// spentToday sums the estimated cost of the tenant's model calls, failed
// ones included, finished since the current UTC day began, and says when
// the day ends. Only jobs still live or changed today can have such calls:
// a job's status changes after its last call.
func spentToday(ctx context.Context, q queryRower, tenant string) (float64, time.Time, error) {
	var spent float64
	var dayEnd time.Time
	err := q.QueryRow(ctx, `
WITH day AS (SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start),
tj AS (
	SELECT j.id FROM jobs j, day
	WHERE j.tenant_id = $1 AND (j.status IN ('queued','running','merging') OR j.updated_at >= day.start)
)
SELECT coalesce((SELECT sum(c.cost_usd) FROM chunks c JOIN tj ON c.job_id = tj.id, day WHERE c.created_at >= day.start), 0)::float8
     + coalesce((SELECT sum(f.cost_usd) FROM call_failures f JOIN tj ON f.job_id = tj.id, day WHERE f.finished_at >= day.start), 0)::float8,
       (SELECT start + interval '1 day' FROM day)`, tenant).Scan(&spent, &dayEnd)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: spend of tenant %s today: %w", tenant, err)
	}
	return spent, dayEnd, nil
}
