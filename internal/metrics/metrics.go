// Package metrics defines carryover's Prometheus metrics. A worker owns one
// Metrics with its own registry (no global state); a nil *Metrics records
// nothing, so handlers run the same with or without it.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the worker's own series.
type Metrics struct {
	Registry      *prometheus.Registry
	chunkSeconds  *prometheus.HistogramVec
	callSeconds   *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	cost          *prometheus.CounterVec
	mergeSeconds  prometheus.Histogram
	mergeFailures prometheus.Counter
	jobsFinished  *prometheus.CounterVec
	bgEvents      *prometheus.CounterVec
	bgPolls       prometheus.Histogram
	bgSeconds     prometheus.Histogram
	schemas       prometheus.Counter
}

// New registers the metrics, plus the Go runtime and process collectors, in
// a registry of their own.
func New() *Metrics {
	r := prometheus.NewRegistry()
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m := &Metrics{
		Registry: r,
		chunkSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "carryover_chunk_task_seconds",
			Help: "Time to handle one chunk task, by what it did (stored, failed, waited, skipped).", Buckets: buckets}, []string{"outcome"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "carryover_model_call_seconds",
			Help: "Model call latency by model (as the price table names it, or \"other\") and outcome (a finish reason, or an error type).", Buckets: buckets}, []string{"model", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "carryover_tokens_total",
			Help: "Tokens billed, by model (as the price table names it, or \"other\") and kind (input, cached, output, reasoning; reasoning is part of output)."}, []string{"model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "carryover_cost_usd_total",
			Help: "Estimated cost in USD by model (priced models only)."}, []string{"model"}),
		mergeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "carryover_merge_seconds",
			Help: "Time to merge a job's chunks.", Buckets: buckets}),
		mergeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "carryover_merge_failures_total",
			Help: "Merges that could not verify every join."}),
		jobsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "carryover_jobs_finished_total",
			Help: "Jobs that reached a final status, by status and stop reason."}, []string{"status", "stop_reason"}),
		bgEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "carryover_background_calls_total",
			Help: "Background (detached) model calls by event: created, poll (found unfinished), resumed (picked up after a delivery died), expired (the provider forgot the id; a new call was made), cancelled."},
			[]string{"event"}),
		bgPolls: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "carryover_background_polls_per_call",
			Help: "Polls a background call took to be read finished (the last one included).", Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 32}}),
		bgSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "carryover_background_seconds",
			Help: "Time from creating a background call to reading it finished.", Buckets: buckets}),
		schemas: prometheus.NewCounter(prometheus.CounterOpts{Name: "carryover_schema_compiles_total",
			Help: "JSON Schemas compiled to validate merged documents (a job's schema is compiled once per worker, not at every merge)."}),
	}
	r.MustRegister(m.chunkSeconds, m.callSeconds, m.tokens, m.cost, m.mergeSeconds, m.mergeFailures, m.jobsFinished, m.schemas,
		m.bgEvents, m.bgPolls, m.bgSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ChunkTask records one chunk task's duration and what it did.
func (m *Metrics) ChunkTask(outcome string, d time.Duration) {
	if m != nil {
		m.chunkSeconds.WithLabelValues(outcome).Observe(d.Seconds())
	}
}

// OtherModel is the model label of every model the price table lacks.
const OtherModel = "other"

// Call records a model call with its usage and cost (cost may be nil).
// model must come from a bounded set — a name of the price table, or
// OtherModel — never straight from a request: each value is a series.
func (m *Metrics) Call(model, outcome string, d time.Duration, input, cached, output, reasoning int64, cost *float64) {
	if m == nil {
		return
	}
	m.callSeconds.WithLabelValues(model, outcome).Observe(d.Seconds())
	for kind, n := range map[string]int64{"input": input, "cached": cached, "output": output, "reasoning": reasoning} {
		if n > 0 {
			m.tokens.WithLabelValues(model, kind).Add(float64(n))
		}
	}
	if cost != nil && *cost > 0 {
		m.cost.WithLabelValues(model).Add(*cost)
	}
}

// Merge records a merge.
func (m *Metrics) Merge(d time.Duration, success bool) {
	if m == nil {
		return
	}
	m.mergeSeconds.Observe(d.Seconds())
	if !success {
		m.mergeFailures.Inc()
	}
}

// JobFinished counts a job reaching its final status.
func (m *Metrics) JobFinished(status, stopReason string) {
	if m != nil {
		m.jobsFinished.WithLabelValues(status, stopReason).Inc()
	}
}

// Background counts an event of a background call (created, poll, resumed,
// expired, cancelled).
func (m *Metrics) Background(event string) {
	if m != nil {
		m.bgEvents.WithLabelValues(event).Inc()
	}
}

// BackgroundDone records a background call read finished: the polls it
// took and the time from its creation.
func (m *Metrics) BackgroundDone(polls int, d time.Duration) {
	if m != nil {
		m.bgPolls.Observe(float64(polls))
		m.bgSeconds.Observe(d.Seconds())
	}
}

var (
	jobsDesc = prometheus.NewDesc("carryover_jobs", "Jobs by status, as stored in Postgres.", []string{"status"}, nil)
	bgDesc   = prometheus.NewDesc("carryover_background_in_flight",
		"Background calls in flight at the provider, by the status their last poll saw, as stored in Postgres.", []string{"status"}, nil)
)

// JobsCollector reports jobs by status from count, called at scrape time:
// the source of truth is Postgres, not a counter in one process.
func JobsCollector(count func(context.Context) (map[string]int64, error), statuses []string) prometheus.Collector {
	return statusCollector{desc: jobsDesc, count: count, statuses: statuses}
}

// BackgroundCollector reports the background calls in flight by status
// (queued, in_progress) from count, called at scrape time.
func BackgroundCollector(count func(context.Context) (map[string]int64, error)) prometheus.Collector {
	return statusCollector{desc: bgDesc, count: count, statuses: []string{"queued", "in_progress"}}
}

// statusCollector reports a gauge per status from a count by status read
// at scrape time; a status the count lacks reports 0.
type statusCollector struct {
	desc     *prometheus.Desc
	count    func(context.Context) (map[string]int64, error)
	statuses []string
}

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, s := range c.statuses {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

// SchemaCompiled counts one JSON Schema compiled for a merge.
func (m *Metrics) SchemaCompiled() {
	if m != nil {
		m.schemas.Inc()
	}
}
