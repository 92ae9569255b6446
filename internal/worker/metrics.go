package worker

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
	asynqmetrics "github.com/hibiken/asynq/x/metrics"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carryover/carryover/internal/metrics"
	"github.com/carryover/carryover/internal/store"
)

// newMetrics registers the worker's metrics, asynq's queue collector and a
// gauge of jobs by status read from Postgres at scrape time.
func newMetrics(st *store.Store, insp *asynq.Inspector) *metrics.Metrics {
	m := metrics.New()
	m.Registry.MustRegister(asynqmetrics.NewQueueMetricsCollector(insp), jobsByStatus{st})
	return m
}

var jobsDesc = prometheus.NewDesc("carryover_jobs", "Jobs by status, as stored in Postgres.", []string{"status"}, nil)

// jobsByStatus is a collector: the source of truth is Postgres, not a counter.
type jobsByStatus struct{ st *store.Store }

func (jobsByStatus) Describe(ch chan<- *prometheus.Desc) { ch <- jobsDesc }

func (c jobsByStatus) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.st.CountByStatus(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	for _, s := range []string{store.StatusQueued, store.StatusRunning, store.StatusMerging, store.StatusSucceeded,
		store.StatusPartial, store.StatusFailed, store.StatusCancelled} {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}
