package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/cmdline"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/ratelimit"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/worker"
)

// runAPI serves the HTTP API until SIGINT/SIGTERM.
func runAPI(args []string, stderr io.Writer) error {
	cfg := config.FromEnv()
	fs := flag.NewFlagSet("worker api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterStoreFlags(fs)
	bounds := config.APIBoundsFromEnv()
	bounds.RegisterFlags(fs)
	addr := fs.String("addr", envOr("API_ADDR", "127.0.0.1:8080"), "listen address (env API_ADDR)")
	opsAddr := fs.String("ops-addr", envOr("API_OPS_ADDR", "127.0.0.1:8081"), "operator-only listener for /metrics and /dashboard/; empty disables (env API_OPS_ADDR)")
	grace := fs.Duration("shutdown-grace", 10*time.Second,
		"on SIGTERM, how long requests in flight may take to finish before their connections are closed; open streams end at once (env API_SHUTDOWN_GRACE)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error (env LOG_LEVEL)")
	cfg.RegisterAPIFlags(fs)
	cfg.RegisterWebhookAllowFlag(fs)
	cfg.RegisterMemoryLimitFlag(fs)
	if v := os.Getenv("API_SHUTDOWN_GRACE"); v != "" {
		if err := fs.Set("shutdown-grace", v); err != nil {
			return fmt.Errorf("API_SHUTDOWN_GRACE: %w", err)
		}
	}
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if err := cmdline.NoArgs(fs); err != nil {
		return err
	}
	if *grace < 0 {
		return fmt.Errorf("--shutdown-grace: must not be negative, got %s", *grace)
	}
	if err := bounds.Validate(); err != nil {
		return err
	}
	log, err := cfg.Logger()
	if err != nil {
		return err
	}
	redis.SetLogger(redisconn.Logger{Log: log})
	// Requests and streams are bounded one by one; many at once on a small
	// container are not, as for the worker.
	if _, err := worker.ApplyMemoryLimit(cfg.MemoryLimit, log); err != nil {
		return err
	}
	perKey, authFailures, err := cfg.APILimits()
	if err != nil {
		return err
	}
	quota, err := cfg.Quota()
	if err != nil {
		return err
	}
	tp, stopTracing, err := startTracing("carryover-api", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := client.New(ctx, client.Config{DatabaseURL: cfg.DatabaseURL, RedisURL: cfg.RedisURL,
		ChunkQueue: cfg.ChunkQueue, MergeQueue: cfg.MergeQueue, ChunkLanes: cfg.ChunkLanes, Logger: log, MaxConns: 64,
		Quota: &quota, AcquireTimeout: bounds.DBAcquireTimeout, WebhookAllow: cfg.WebhookAllow, TracerProvider: tp})
	if err != nil {
		return err
	}
	defer c.Close()
	// The rate limits' buckets live in Redis, shared by every API process.
	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	limits := api.Limits{Limiter: ratelimit.New(rdb, "carryover:ratelimit:"), PerKey: perKey,
		AuthFailures: authFailures, TrustForwarded: cfg.APITrustForwarded}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	defer ln.Close()
	apiSrv := api.New(c, log, api.WithLimits(limits), api.WithStreamLimits(bounds.StreamLimits()))
	srv := &http.Server{Handler: apiSrv.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	log.Info("api listening", "addr", ln.Addr().String())
	var osrv *http.Server
	if *opsAddr != "" {
		ops, err := api.OpsHandler(c, cfg.RedisURL)
		if err != nil {
			return err
		}
		oln, err := net.Listen("tcp", *opsAddr)
		if err != nil {
			return fmt.Errorf("--ops-addr: %w", err)
		}
		osrv = &http.Server{Handler: ops, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = osrv.Serve(oln) }()
		defer osrv.Close()
		log.Info("operator listener (metrics, dashboard)", "addr", oln.Addr().String())
	}
	return serveAPI(ctx, log, apiSrv, srv, ln, osrv, *grace)
}

// serveAPI serves srv on ln until ctx ends, then shuts down so that a
// replacement can start at once: the operator listener closes first (it
// serves only scrapes and the dashboard), open streams end with a retry
// hint (api.Server.Drain), and requests in flight get grace to finish
// before their connections are closed. A shutdown that had to cut requests
// short is still a clean stop (exit 0), logged with a warning: the process
// did what SIGTERM asked, and a supervisor should not count it as a crash.
func serveAPI(ctx context.Context, log *slog.Logger, a *api.Server, srv *http.Server, ln net.Listener, osrv *http.Server, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("api shutting down", "grace", grace.String())
	if osrv != nil {
		_ = osrv.Close()
	}
	a.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("api shutdown: requests still in flight after the grace period were cut short", "grace", grace.String())
		err = srv.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("api shutdown: %w", err)
	}
	log.Info("api stopped")
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
