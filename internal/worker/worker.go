// Package worker assembles a carryover worker process: the asynq server with
// the chunk and merge handlers, the maintenance loops (reconciler,
// retention), and the health endpoints.
// cmd/worker runs it; end-to-end tests run it in-process the same way.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/maintenance"
	"github.com/carryover/carryover/internal/metrics"
	"github.com/carryover/carryover/internal/provider"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/throttle"
	"github.com/carryover/carryover/internal/webhook"
)

// Options configure Run.
type Options struct {
	Config config.Config
	Logger *slog.Logger
	// Provider overrides the OpenAI provider built from Config (tests use the
	// real provider against the simulator; this is for instrumentation).
	Provider continuation.Provider
	// SkipMigrate skips applying migrations at start.
	SkipMigrate bool
	// OnHealthListen, if set, is told the health listener's address (for
	// HealthAddr "127.0.0.1:0" in tests).
	OnHealthListen func(addr string)
	// WebhookResolver, if set, resolves webhook host names instead of DNS
	// (tests name hosts that must never reach a real resolver).
	WebhookResolver egress.Resolver
	// TracerProvider makes the spans of tasks and model calls; nil is the
	// global provider (a no-op one unless the program set another).
	TracerProvider trace.TracerProvider
}

// Run migrates, then processes tasks until ctx ends, then shuts down
// gracefully (in-flight tasks finish or are handed back to the queue). It
// returns only once every goroutine it started has stopped.
func Run(ctx context.Context, o Options) error {
	cfg, log := o.Config, cmp.Or(o.Logger, slog.Default())
	if err := cfg.Validate(); err != nil {
		return err
	}
	if !o.SkipMigrate {
		if err := store.Migrate(cfg.DatabaseURL); err != nil {
			return err
		}
	}
	// A small fixed pool, whatever the concurrency: claims and saves go
	// through the store's lock session (one connection more), and every
	// other statement holds a pooled connection only while it runs — no
	// task holds one across a model call — so tasks beyond the pool wait
	// for a statement's turn, not for a call. That turn is bounded: a task
	// that cannot get a connection in AcquireTimeout fails and is retried
	// by the queue rather than hanging in its slot.
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{MaxConns: int32(cmp.Or(cfg.DBConns, config.DefaultDBConns)),
		AcquireTimeout: AcquireTimeout})
	if err != nil {
		return err
	}
	defer st.Close()
	rdb, err := openRedis(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer rdb.Close()
	queues := cfg.Queues()
	tasks := jobs.NewDispatcher(asynq.NewClientFromRedisClient(rdb), queues,
		jobs.TaskOptions{MaxRetry: cfg.MaxRetry, Timeout: jobs.DefaultTaskOptions().Timeout}, st)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	m := newMetrics(st, insp)
	handlers, err := newHandlers(cfg, o, st, rdb, tasks, m, log)
	if err != nil {
		return err
	}
	srv, qweights := newServer(cfg, rdb, queues, log)
	mux := asynq.NewServeMux()
	handlers.Register(mux)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	hooks := newWebhookServer(cfg, rdb, queues, log)
	hookMux := asynq.NewServeMux()
	handlers.RegisterWebhooks(hookMux)
	if err := hooks.Start(hookMux); err != nil {
		srv.Shutdown()
		return fmt.Errorf("start the webhook server: %w", err)
	}
	stopMaintenance := startMaintenance(ctx, maintenanceServices(cfg, st, tasks, insp, log)...)
	var health *http.Server
	if cfg.HealthAddr != "" {
		if health, err = serveHealth(cfg.HealthAddr, st, rdb, m, log, o.OnHealthListen); err != nil {
			stopMaintenance()
			hooks.Shutdown()
			srv.Shutdown()
			return err
		}
	}
	log.Info("worker started", "concurrency", cfg.Concurrency, "queues", qweights, "database", store.Redact(cfg.DatabaseURL),
		"webhook_queue", queues.Webhook(), "webhook_concurrency", webhookConcurrency(cfg), "webhook_allow", cfg.WebhookAllow,
		"webhook_proxy", cfg.WebhookProxy != "",
		"postgres_connections", cmp.Or(cfg.DBConns, config.DefaultDBConns)+1, "openai_base_url", cfg.OpenAIBaseURL, "background", cfg.BackgroundOn(),
		"background_hold", cfg.BackgroundHold.String())
	<-ctx.Done()
	log.Info("worker shutting down")
	stopMaintenance()
	hooks.Shutdown()
	srv.Shutdown()
	if health != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = health.Shutdown(sctx)
		cancel()
	}
	return nil
}

// openRedis connects to Redis — one server, a Sentinel-monitored master or
// a cluster, as REDIS_URL says (see redisconn) — with a pool (per node, for
// a cluster) large enough for every task slot (the webhook server's
// included) plus both asynq servers' own loops, and spares Redis the
// dequeue probes of queues just found empty (emptyQueues).
func openRedis(ctx context.Context, cfg config.Config, log *slog.Logger) (redis.UniversalClient, error) {
	ropt, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	ropt.MinPoolSize(cfg.Concurrency + webhookConcurrency(cfg) + 12)
	rdb := ropt.NewClient()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis ping (%s): %w", ropt, err)
	}
	rdb.AddHook(newEmptyQueues())
	log.Info("redis connected", "redis", ropt.String())
	return rdb, nil
}

// newHandlers builds the task handlers; p, when nil, is the OpenAI provider
// the configuration describes.
func newHandlers(cfg config.Config, o Options, st *store.Store, rdb redis.UniversalClient, tasks *jobs.Dispatcher,
	m *metrics.Metrics, log *slog.Logger) (*jobs.Handlers, error) {
	p := o.Provider
	tcfg, err := cfg.Throttle()
	if err != nil {
		return nil, err
	}
	var thr *throttle.Throttle
	if tcfg != nil {
		thr = throttle.New(rdb, *tcfg)
	}
	if p == nil {
		if p, err = newProvider(cfg, thr); err != nil {
			return nil, err
		}
	}
	var secret []byte
	if cfg.WebhookSecret != "" {
		var err error
		if secret, err = webhook.ParseSecret(cfg.WebhookSecret); err != nil {
			return nil, fmt.Errorf("CARRYOVER_WEBHOOK_SECRET: %w", err)
		}
	}
	allow, err := egress.Parse(cfg.WebhookAllow)
	if err != nil {
		return nil, err
	}
	proxy, err := egress.ParseProxy(cfg.WebhookProxy)
	if err != nil {
		return nil, err
	}
	return jobs.NewHandlers(jobs.HandlerConfig{Store: st, Tasks: tasks, Provider: p, Logger: log, Metrics: m,
		WebhookSecret: secret, Webhooks: egress.ClientConfig{Policy: allow, Proxy: proxy, Resolver: o.WebhookResolver},
		DefaultStrategy: carryovertype.Strategy(cfg.DefaultStrategy()),
		CallTimeout:     cfg.CallTimeout, Background: cfg.BackgroundOn(), BackgroundHold: cfg.BackgroundHold,
		Concurrency: cfg.Concurrency, TracerProvider: o.TracerProvider, Throttle: thr}), nil
}

// newProvider is the OpenAI-compatible provider the configuration names,
// with an idle pool sized to keep a connection per task slot warm; with a
// throttle, every reply's rate-limit headers feed it.
func newProvider(cfg config.Config, thr *throttle.Throttle) (continuation.Provider, error) {
	prefill, err := cfg.Prefill()
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		MaxIdleConns:        cfg.Concurrency * 2,
		MaxIdleConnsPerHost: cfg.Concurrency * 2,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if thr != nil {
		rt = thr.Transport(rt)
	}
	return provider.New(provider.Config{
		BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, PrefillFields: prefill,
		HTTPClient: &http.Client{Transport: rt},
	}), nil
}

// AcquireTimeout bounds a worker statement's wait for a pooled Postgres
// connection. Statements hold connections for milliseconds, so a wait this
// long means Postgres is stalled; the task fails and is retried.
const AcquireTimeout = 30 * time.Second

// newServer configures the asynq server, and says the queue weights it
// serves. Every chunk lane weighs the same: asynq (StrictPriority off)
// orders the queues for each dequeue by a weighted shuffle and takes the
// first non-empty one, so a tenant whose lane has one task waits for about
// as many tasks as there are busy lanes, whatever the backlog in the
// others. A merge queue of its own weighs as much as half the lanes
// together: chunks before merges, two to one, when every lane is busy.
func newServer(cfg config.Config, rdb redis.UniversalClient, queues jobs.Queues, log *slog.Logger) (*asynq.Server, map[string]int) {
	lanes := queues.ChunkLanes()
	qweights := make(map[string]int, len(lanes)+1)
	for _, q := range lanes {
		qweights[q] = 2
	}
	if _, ok := qweights[queues.Merge]; !ok {
		qweights[queues.Merge] = len(lanes)
	}
	return asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: cfg.Concurrency,
		Queues:      qweights,
		// asynq's processor sleeps this long, blocking every dequeue, whenever
		// it finds the queues empty; with its 1s default a chain of chunk tasks
		// stalls at each gap. A short poll costs one Redis script call.
		TaskCheckInterval: cfg.PollInterval,
		// Retries (a 429's Retry-After, a backoff) become runnable only when
		// the forwarder moves them; asynq's 5s default would stretch them.
		DelayedTaskCheckInterval: cfg.DelayedInterval,
		RetryDelayFunc:           jobs.RetryDelay,
		IsFailure:                jobs.IsFailure,
		Logger:                   asynqLogger{log.With("component", "asynq")},
		LogLevel:                 asynq.WarnLevel,
		ShutdownTimeout:          20 * time.Second,
	}), qweights
}

// webhookConcurrency is the webhook server's slots.
func webhookConcurrency(cfg config.Config) int {
	return cmp.Or(cfg.WebhookConcurrency, config.DefaultWebhookConcurrency)
}

// newWebhookServer configures a second asynq server, for the webhook queue
// alone: asynq has one concurrency per server, and deliveries must not take
// the chunk tasks' slots (a receiver that never answers would hold one for
// the whole delivery timeout), so they get slots of their own, and their
// own retry schedule (about a day).
func newWebhookServer(cfg config.Config, rdb redis.UniversalClient, queues jobs.Queues, log *slog.Logger) *asynq.Server {
	return asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: webhookConcurrency(cfg),
		Queues:      map[string]int{queues.Webhook(): 1},
		// Nothing chains on a webhook: a slower poll than the chunk
		// server's (50ms by default) saves idle calls to Redis at no cost.
		TaskCheckInterval:        max(cfg.PollInterval, 500*time.Millisecond),
		DelayedTaskCheckInterval: cfg.DelayedInterval,
		RetryDelayFunc:           jobs.WebhookRetryDelay,
		Logger:                   asynqLogger{log.With("component", "asynq-webhooks")},
		LogLevel:                 asynq.WarnLevel,
		ShutdownTimeout:          15 * time.Second,
	})
}

// maintenanceServices are the worker's periodic loops: the reconciler, and
// retention when the configuration keeps finished jobs for a limited time.
func maintenanceServices(cfg config.Config, st *store.Store, tasks *jobs.Dispatcher, insp *asynq.Inspector,
	log *slog.Logger) []service {
	services := []service{maintenance.NewReconciler(maintenance.ReconcilerConfig{Store: st, Tasks: tasks, Inspector: insp,
		Logger: log.With("component", "reconciler"), Interval: cfg.ReconcileInterval, StaleAfter: cfg.StaleAfter})}
	if cfg.Retention > 0 {
		services = append(services, maintenance.NewRetention(maintenance.RetentionConfig{Store: st,
			Logger: log.With("component", "retention"), Age: cfg.Retention, Interval: cfg.ReconcileInterval}))
	}
	return services
}

// service is a maintenance loop: Run returns once ctx ends.
type service interface{ Run(ctx context.Context) }

// startMaintenance runs the services until the returned stop is called;
// stop returns once every one of them has. They run on a context of their
// own (with ctx's values) so that Run stops them in order, before the asynq
// server.
func startMaintenance(ctx context.Context, services ...service) (stop func()) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Go(func() { s.Run(sctx) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// serveHealth serves /healthz, /readyz and /metrics on the operator-only
// listener.
func serveHealth(addr string, st *store.Store, rdb redis.UniversalClient, m *metrics.Metrics, log *slog.Logger, onListen func(string)) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		// The answer names the service; the error itself goes to the log.
		if err := st.Ping(ctx); err != nil {
			log.Warn("not ready", "err", fmt.Errorf("postgres: %w", err))
			http.Error(w, "postgres unavailable", http.StatusServiceUnavailable)
			return
		}
		if err := rdb.Ping(ctx).Err(); err != nil {
			log.Warn("not ready", "err", fmt.Errorf("redis: %w", err))
			http.Error(w, "redis unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health listener: %w", err)
	}
	if onListen != nil {
		onListen(ln.Addr().String())
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health server", "err", err)
		}
	}()
	return srv, nil
}

// asynqLogger routes asynq's own log lines into slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
