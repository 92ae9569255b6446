package api

import (
	"fmt"
	"net/http"

	asynqmetrics "github.com/hibiken/asynq/x/metrics"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/metrics"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/store"
)

// OpsHandler serves what operators need and tenants must not reach, on a
// listener of its own: Prometheus /metrics (jobs by status from Postgres,
// asynq's queue metrics, the process) and the asynqmon dashboard under
// /dashboard/, read-only.
func OpsHandler(c *client.Client, redisURL string) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(asynqmetrics.NewQueueMetricsCollector(c.Inspector()), metrics.JobsCollector(c.JobCounts, store.Statuses()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opt, err := redisconn.Parse(redisURL)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	dash := asynqmon.New(asynqmon.Options{RootPath: "/dashboard", RedisConnOpt: opt.ConnOpt(), ReadOnly: true})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle(dash.RootPath()+"/", dash)
	return mux, nil
}
