package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error (env LOG_LEVEL)")
	cfg.RegisterAPIFlags(fs)
	cfg.RegisterWebhookAllowFlag(fs)
	cfg.RegisterMemoryLimitFlag(fs)
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if err := cmdline.NoArgs(fs); err != nil {
		return err
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
	apiSrv := api.New(c, log, api.WithLimits(limits), api.WithStreamLimits(bounds.StreamLimits()))
	srv := &http.Server{Handler: apiSrv.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	srv.RegisterOnShutdown(apiSrv.Drain)
	log.Info("api listening", "addr", ln.Addr().String())
	if *opsAddr != "" {
		ops, err := api.OpsHandler(c, cfg.RedisURL)
		if err != nil {
			return err
		}
		oln, err := net.Listen("tcp", *opsAddr)
		if err != nil {
			return fmt.Errorf("--ops-addr: %w", err)
		}
		osrv := &http.Server{Handler: ops, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = osrv.Serve(oln) }()
		defer osrv.Close()
		log.Info("operator listener (metrics, dashboard)", "addr", oln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
