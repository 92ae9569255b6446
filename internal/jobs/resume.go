package jobs

import (
	"slices"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/store"
)

// A resume's max_attempts counts every chunk of the job, those already
// stored included, as continuation.max_attempts does; the cap of
// carryovertype.MaxMaxAttempts applies per execution: a job's first run makes
// at most that many chunks, and each resume at most that many more. So a job
// that stopped at 50 chunks resumes with max_attempts up to 100, and one
// resumed to 100 later up to 150. Raising the cap with each resume (rather
// than reading max_attempts as "more chunks") keeps the field meaning what it
// means on the job, in its status and in its events, and still bounds what
// one resume can spend.

// CheckResume validates resume options on their own, naming each bad field
// as the options name it (max_attempts, error_policy.max_retries): what
// does not depend on the job. Resume checks max_attempts against the chunks
// the job has stored too.
func CheckResume(o carryovertype.ResumeOptions) error {
	var v fieldErrors
	v.resume(o)
	return v.err()
}

// storedChunks is what a resume's max_attempts is checked against: the
// job's current limit and the chunks it holds.
type storedChunks struct{ limit, stored int }

// resume checks resume options on their own (resumeAttempts with the job's
// chunks checks max_attempts against them).
func (v *fieldErrors) resume(o carryovertype.ResumeOptions) {
	v.resumeAttempts(o.MaxAttempts, nil)
	v.budgets(carryovertype.Continuation{MaxTotalOutputTokens: o.MaxTotalOutputTokens, MaxCostUSD: o.MaxCostUSD,
		TimeLimitSeconds: o.TimeLimitSeconds, MaxRecords: o.MaxRecords}, "")
	if o.ErrorPolicy != nil {
		v.policy("error_policy", *o.ErrorPolicy)
	}
}

func (v *fieldErrors) resumeAttempts(n int, job *storedChunks) {
	const field = "max_attempts"
	switch {
	case n < 0:
		v.add(field, "must be positive (the job's new most chunks, those stored included), got %d", n)
	case job == nil:
	case n == 0 && job.limit <= job.stored:
		v.add(field, "is needed: the job's limit of %d chunks is used up; give a new limit between %d and %d (it counts the %d chunks stored; a resume makes at most %d more)",
			job.limit, job.stored+1, job.stored+carryovertype.MaxMaxAttempts, job.stored, carryovertype.MaxMaxAttempts)
	case n != 0 && (n <= job.stored || n > job.stored+carryovertype.MaxMaxAttempts):
		v.add(field, "must be between %d and %d, got %d: it counts the %d chunks already stored, and a resume makes at most %d more",
			job.stored+1, job.stored+carryovertype.MaxMaxAttempts, n, job.stored, carryovertype.MaxMaxAttempts)
	}
}

// withResume is a job's continuation settings with the options applied (a
// field left at zero keeps the job's value).
func withResume(c carryovertype.Continuation, o carryovertype.ResumeOptions) carryovertype.Continuation {
	if o.MaxAttempts != 0 {
		c.MaxAttempts = o.MaxAttempts
	}
	if o.MaxTotalOutputTokens != 0 {
		c.MaxTotalOutputTokens = o.MaxTotalOutputTokens
	}
	if o.MaxCostUSD != 0 {
		c.MaxCostUSD = o.MaxCostUSD
	}
	if o.TimeLimitSeconds != 0 {
		c.TimeLimitSeconds = o.TimeLimitSeconds
	}
	if o.MaxRecords != 0 {
		c.MaxRecords = o.MaxRecords
	}
	if o.ErrorPolicy != nil {
		p := o.ErrorPolicy.Normalized()
		c.ErrorPolicy = &p
	}
	return c
}

// err is the collected problems as a *ValidationError, or nil.
func (v fieldErrors) err() error {
	if len(v) == 0 {
		return nil
	}
	return &carryovertype.ValidationError{Fields: v}
}

// resumable reports whether a job stopped where store.Resume takes it back
// (which decides, atomically; this only orders the answers).
func resumable(j store.Job) bool {
	switch j.Status {
	case store.StatusPartial, store.StatusFailed, store.StatusCancelled:
		return j.StopReason != nil && slices.Contains(store.ResumableStops(), *j.StopReason)
	}
	return false
}
