// Command worker runs carryover's queue worker and its maintenance commands.
//
//	worker [run] [flags]                            process chunk and merge tasks (migrates first)
//	worker migrate [flags]                          apply the database migrations and exit
//	worker merge --format F [--meta FILE] CHUNK_FILE...   merge chunk files offline, print the document
//	worker api [--addr 127.0.0.1:8080]              serve the HTTP API
//	worker apikey create --tenant NAME | revoke PREFIX   manage the API's bearer keys
//	worker help                                     list the subcommands
//
// An unknown subcommand or a stray argument is refused with the usage on
// stderr and exit code 2, before anything connects: a typo never starts a
// worker.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/internal/cmdline"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/redisconn"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/worker"
)

// subcommands are worker's subcommands; a first argument that is not one
// (nor a flag) is refused.
var subcommands = []string{"run", "migrate", "merge", "api", "apikey", "help"}

// usage lists the subcommands; `worker -h` and `worker help` print it.
func usage(w io.Writer) {
	fmt.Fprint(w, `usage: worker [run] [flags]      process chunk and merge tasks (applies the migrations first)
       worker migrate [flags]     apply the database migrations and exit
       worker merge --format F [--meta FILE] CHUNK_FILE...
                                  merge chunk files offline and print the document
       worker api [flags]         serve the HTTP API (--addr 127.0.0.1:8080, --ops-addr 127.0.0.1:8081)
       worker apikey create --tenant NAME
       worker apikey revoke [--tenant NAME] PREFIX|KEY
                                  manage the HTTP API's bearer keys
       worker help                this list
A subcommand's flags: worker SUBCOMMAND -h.
`)
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(cmdline.Exit("worker", err, os.Stderr, usage))
}

func run(args []string, stdout, stderr io.Writer) error {
	cfg := config.FromEnv()
	cmd := "run"
	if len(args) > 0 && (len(args[0]) == 0 || args[0][0] != '-') {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "help":
		usage(stderr)
		return nil
	case "migrate":
		fs := flag.NewFlagSet("worker migrate", flag.ContinueOnError)
		fs.SetOutput(stderr)
		cfg.RegisterStoreFlags(fs)
		if err := cmdline.Parse(fs, args); err != nil {
			return err
		}
		if err := cmdline.NoArgs(fs); err != nil {
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
	case "run":
		return runWorker(cfg, args, stderr)
	}
	return cmdline.Unknown("worker", cmd, subcommands)
}

// runWorker processes chunk and merge tasks until SIGINT/SIGTERM.
func runWorker(cfg config.Config, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterWorkerFlags(fs)
	fs.Usage = func() {
		usage(stderr)
		fmt.Fprintln(stderr, "flags of worker (run):")
		fs.PrintDefaults()
	}
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if err := cmdline.NoArgs(fs); err != nil {
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
