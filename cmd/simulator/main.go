// Command simulator serves the OpenAI-compatible model simulator for demos and
// manual testing. Point OPENAI_BASE_URL at http://<addr>/v1 and use any API key.
//
//	simulator [--addr 127.0.0.1:8089] [--latency 0s] [--max-responses N] [--background-retention 10m] [--rpm N] [--tpm N] [--rate-window 1m]
//
// The address defaults to $SIMULATOR_ADDR, else 127.0.0.1:8089: loopback only
// unless asked otherwise, since the simulator accepts any key.
//
// It serves POST /v1/responses (streaming, previous_response_id, assistant
// input items, function tools, text.format, background mode), GET
// /v1/responses/{id} (a background response's poll, or its stream with
// ?stream=true&starting_after=N), POST /v1/responses/{id}/cancel, POST
// /v1/chat/completions (streaming with stream_options.include_usage, tools,
// response_format, vLLM's continue_final_message) and GET /v1/models; and,
// for a benchmark in another process, GET /sim/stats (background counters
// as JSON, no key needed). A
// [[sim ...]] directive in the prompt chooses the document and the
// misbehaviour; simulator -h prints its keys (directive keys format, size,
// seed, tag, reasoning, behavior, tool and faults; see package
// internal/simulator for the details).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/carryover/carryover/internal/simulator"
)

const defaultAddr = "127.0.0.1:8089"

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Args[1:], log); err != nil {
		log.Error("simulator stopped", "err", err)
		os.Exit(1)
	}
}

func run(args []string, log *slog.Logger) error {
	addr := defaultAddr
	if env := os.Getenv("SIMULATOR_ADDR"); env != "" {
		addr = env
	}
	fs := flag.NewFlagSet("simulator", flag.ContinueOnError)
	fs.StringVar(&addr, "addr", addr, "listen address (env SIMULATOR_ADDR)")
	latency := fs.Duration("latency", 0, "latency added to every model reply")
	maxResponses := fs.Int("max-responses", 0, "stored responses before the oldest are evicted (0 = default)")
	retention := fs.Duration("background-retention", 0, "how long a background response is kept after it ended (0 = OpenAI's 10m)")
	var limits simulator.RateLimits
	fs.IntVar(&limits.RPM, "rpm", 0, "requests per minute each model allows; past it a call is answered 429 (0 = no limit)")
	fs.IntVar(&limits.TPM, "tpm", 0, "tokens per minute each model allows (input plus output budget); 0 = no limit")
	fs.DurationVar(&limits.Window, "rate-window", 0, "how much of a minute's limit can be spent at once (0 = a whole minute)")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: simulator [--addr %s] [--latency 0s] [--max-responses N] [--background-retention 10m] [--rpm N] [--tpm N] [--rate-window 1m]\n\n", defaultAddr)
		fmt.Fprintln(out, "An OpenAI-compatible model simulator (Responses API and Chat Completions).")
		fmt.Fprintln(out, "Point OPENAI_BASE_URL at http://<addr>/v1 and use any API key.")
		fmt.Fprintln(out)
		fs.PrintDefaults()
		fmt.Fprintln(out)
		fmt.Fprint(out, simulator.DirectiveHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler: simulator.New(simulator.Config{Latency: *latency, MaxResponses: *maxResponses, Logger: log,
			BackgroundRetention: *retention, RateLimits: limits}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Info("simulator listening", "addr", ln.Addr().String(), "base_url", "http://"+ln.Addr().String()+"/v1", "latency", *latency,
		"rpm", limits.RPM, "tpm", limits.TPM)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
