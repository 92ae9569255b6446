package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/carryover/carryover/internal/store"
)

// RetentionConfig configures retention.
type RetentionConfig struct {
	Store  *store.Store
	Logger *slog.Logger
	// Age is how long a job stays whole after it finished; older ones lose
	// the text of their chunks and result, every figure stays.
	Age time.Duration
	// Interval between prunes.
	Interval time.Duration
	// Batch is the most jobs pruned at a time.
	Batch int
}

// RetentionIntervalDefault is RetentionConfig.Interval when unset.
const RetentionIntervalDefault = ReconcileIntervalDefault

// Retention prunes the text of jobs finished more than Age ago, so a
// long-running deployment keeps its figures without keeping every answer.
type Retention struct {
	cfg RetentionConfig
	log *slog.Logger
}

// NewRetention builds the retention service.
func NewRetention(cfg RetentionConfig) *Retention {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = RetentionIntervalDefault
	}
	if cfg.Batch <= 0 {
		cfg.Batch = BatchDefault
	}
	return &Retention{cfg: cfg, log: cfg.Logger}
}

// Run prunes every Interval until ctx ends.
func (r *Retention) Run(ctx context.Context) {
	every(ctx, r.cfg.Interval, func(ctx context.Context) {
		if n, err := r.cfg.Store.Prune(ctx, time.Now().Add(-r.cfg.Age), r.cfg.Batch); err != nil && ctx.Err() == nil {
			r.log.Warn("retention failed", "err", err)
		} else if n > 0 {
			r.log.Info("retention removed the content of finished jobs", "jobs", n)
		}
	})
}
