// Command worker runs carryover's queue worker and its maintenance commands.
//
//	worker [flags]                                  process chunk and merge tasks (migrates first)
//	worker migrate [flags]                          apply the database migrations and exit
//	worker merge --format F [--meta FILE] CHUNK_FILE...   merge chunk files offline, print the document
//	worker api [--addr 127.0.0.1:8080]              serve the HTTP API
//	worker apikey create --tenant NAME | revoke PREFIX   manage the API's bearer keys
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/worker"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "worker:", err)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	cfg := config.FromEnv()
	cmd := "run"
	if len(args) > 0 && (args[0] == "run" || args[0] == "migrate" || args[0] == "merge" || args[0] == "api" || args[0] == "apikey") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "migrate":
		fs := flag.NewFlagSet("worker migrate", flag.ContinueOnError)
		fs.SetOutput(stderr)
		cfg.RegisterStoreFlags(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if err := store.Migrate(cfg.DatabaseURL); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "migrations applied to", store.Redact(cfg.DatabaseURL))
		return nil
	case "merge":
		return runMerge(args, stdout, stderr)
	case "api":
		return runAPI(args, stderr)
	case "apikey":
		return runAPIKey(args, stdout, stderr)
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterWorkerFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := cfg.Logger()
	if err != nil {
		return err
	}
	redis.SetLogger(redisconn.Logger{Log: log})
	// Before anything allocates much: a model reply is bounded, but many at
	// once on a small container are not, and the collector should work
	// harder before the kernel's OOM killer does.
	if _, err := worker.ApplyMemoryLimit(cfg.MemoryLimit, log); err != nil {
		return err
	}
	tp, stopTracing, err := startTracing("carryover-worker", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return worker.Run(ctx, worker.Options{Config: cfg, Logger: log, TracerProvider: tp})
}
