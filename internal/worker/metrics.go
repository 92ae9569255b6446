package worker

import (
	"github.com/hibiken/asynq"
	asynqmetrics "github.com/hibiken/asynq/x/metrics"

	"github.com/carryover/carryover/internal/metrics"
	"github.com/carryover/carryover/internal/store"
)

// newMetrics registers the worker's metrics, asynq's queue collector and a
// gauge of jobs by status read from Postgres at scrape time.
func newMetrics(st *store.Store, insp *asynq.Inspector) *metrics.Metrics {
	m := metrics.New()
	m.Registry.MustRegister(asynqmetrics.NewQueueMetricsCollector(insp), metrics.JobsCollector(st.CountByStatus, store.Statuses()),
		metrics.BackgroundCollector(st.BackgroundCounts))
	return m
}
