// Command enqueue submits carryover jobs and reads them back.
//
//	enqueue [--model M] [--format F] [--instructions S] [--max-output-tokens N] [--max-attempts N]
//	        [--on-failure P] [--prompt-file FILE | PROMPT] [--wait]
//	enqueue status ID [--json] [--evaluations]
//	enqueue result ID [--meta]
//	enqueue cancel ID
//	enqueue wait ID [--timeout D]
//	enqueue remerge ID
//	enqueue resume ID [--max-attempts N] [--max-total-output-tokens N] [--max-cost-usd X] [--time-limit-seconds S] [--max-records N] [--error-policy P]
//
// enqueue prints the job ID alone on stdout; with --wait it shows progress on
// stderr and prints the merged result on stdout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/config"
)

// Exit codes: 0 ok (or succeeded), 1 error (or failed/cancelled), 2 partial result.
const exitPartial = 2

type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	var ee exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "enqueue:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg := config.FromEnv()
	if len(args) > 0 {
		switch args[0] {
		case "status", "result", "cancel", "wait", "remerge", "resume":
			return runJobCommand(ctx, cfg, args[0], args[1:], stdout, stderr)
		}
	}
	return runEnqueue(ctx, cfg, args, stdin, stdout, stderr)
}

// parseInterleaved lets flags come before or after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func connect(ctx context.Context, cfg config.Config) (*client.Client, error) {
	// The CLI's own output is its report; only the client's warnings go to stderr.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return client.New(ctx, client.Config{DatabaseURL: cfg.DatabaseURL, RedisURL: cfg.RedisURL,
		ChunkQueue: cfg.ChunkQueue, MergeQueue: cfg.MergeQueue, ChunkLanes: cfg.ChunkLanes, Logger: quiet, WebhookAllow: cfg.WebhookAllow})
}

func runEnqueue(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("enqueue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterStoreFlags(fs)
	var req client.Request
	fs.StringVar(&req.Model, "model", envOr("CARRYOVER_MODEL", "gpt-4.1-mini"), "model name (env CARRYOVER_MODEL)")
	fs.StringVar(&req.Format, "format", "auto", "output format: csv, json, jsonl, markdown, code, diff, text or auto")
	fs.StringVar(&req.Instructions, "instructions", "", "system instructions")
	fs.IntVar(&req.MaxOutputTokens, "max-output-tokens", 0, "output-token limit of each model call (default 4096)")
	fs.IntVar(&req.Continuation.MaxAttempts, "max-attempts", 0, "most chunks (model responses) for the job, 1..50 (default 10)")
	fs.StringVar(&req.Continuation.OnFailure, "on-failure", "", "return_partial (default) or raise_error")
	fs.Int64Var(&req.Continuation.MaxTotalOutputTokens, "max-total-output-tokens", 0, "budget: output tokens over all chunks")
	fs.Float64Var(&req.Continuation.MaxCostUSD, "max-cost-usd", 0, "budget: estimated cost in USD (needs a priced model)")
	fs.Float64Var(&req.Continuation.TimeLimitSeconds, "time-limit-seconds", 0, "budget: seconds from the job's start")
	fs.StringVar(&req.Continuation.StopSequence, "stop-sequence", "", "guard: stop once the answer contains this text")
	noCont := fs.Bool("no-continuation", false, "do not continue a cut-off answer")
	promptFile := fs.String("prompt-file", "", "read the prompt from this file (- for stdin)")
	metadata := fs.String("metadata", "", "caller metadata, a JSON value stored with the job")
	fs.StringVar(&req.IdempotencyKey, "idempotency-key", "", "the same key returns the same job (per tenant)")
	fs.StringVar(&req.Tenant, "tenant", "default", "the tenant the job belongs to")
	fs.Int64Var(&req.Continuation.MaxRecords, "max-records", 0, "guard: stop once the answer holds this many records (CSV rows, JSON Lines, lines)")
	policy := fs.String("error-policy", "", "what a failed call does: retry_transient_errors(N) (default, N=3: model, timeout and unknown errors retried), stop_on_any_error, retry_tool_errors(N), ignore_tool_errors or retry_all(N), then TYPE=stop|ignore|retry[:N] rules, comma separated")
	strategy := fs.String("strategy", "", "continuation strategy: stateful, history, prefill or overlap (default: the worker's provider's)")
	fs.IntVar(&req.Continuation.OverlapLines, "overlap-lines", 0, "overlap strategy: lines the model repeats (default by format)")
	fs.IntVar(&req.Continuation.MaxOutputTokensCeiling, "max-output-tokens-ceiling", 0, "reasoning models: raise a call's budget up to this when reasoning used it all")
	toolsFile := fs.String("tools-file", "", "JSON file of function tools offered to the model (Responses API shape)")
	schemaFile := fs.String("json-schema-file", "", `JSON file {"name":...,"schema":{...},"strict":true}: structured output, validated after the merge`)
	fs.BoolVar(&req.Stream, "stream", false, "stream model calls; a broken stream keeps the text received")
	wait := fs.Bool("wait", false, "wait for the job, show progress on stderr, print the result on stdout")
	timeout := fs.Duration("timeout", 0, "with --wait: give up after this long (0 = no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: enqueue [flags] [--prompt-file FILE | PROMPT] [--wait]\n       enqueue status ID [--json] [--evaluations]\n       enqueue result ID [--meta]\n       enqueue cancel ID\n       enqueue wait ID [--timeout D]\n       enqueue remerge ID\n       enqueue resume ID [--max-attempts N] [--max-total-output-tokens N] [--max-cost-usd X] [--time-limit-seconds S] [--max-records N] [--error-policy P]\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	zeros := flagZeros(fs, requestFlags())
	req.Continuation.ErrorPolicy = policyFlag(*policy, "continuation.error_policy", &zeros)
	req.Continuation.Strategy = client.Strategy(*strategy)
	if *toolsFile != "" {
		b, err := os.ReadFile(*toolsFile)
		if err != nil {
			return fmt.Errorf("--tools-file: %w", err)
		}
		req.Tools = b
	}
	if *schemaFile != "" {
		b, err := os.ReadFile(*schemaFile)
		if err != nil {
			return fmt.Errorf("--json-schema-file: %w", err)
		}
		req.JSONSchema = &client.JSONSchema{}
		if err := json.Unmarshal(b, req.JSONSchema); err != nil {
			return fmt.Errorf("--json-schema-file: %w", err)
		}
	}
	switch {
	case *promptFile != "" && len(pos) > 0:
		return fmt.Errorf("give --prompt-file or PROMPT, not both")
	case *promptFile == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		req.Input.Prompt = string(b)
	case *promptFile != "":
		b, err := os.ReadFile(*promptFile)
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		req.Input.Prompt = string(b)
	case len(pos) > 1:
		return fmt.Errorf("give the prompt as one argument (quote it); got %d", len(pos))
	case len(pos) == 1:
		req.Input.Prompt = pos[0]
	}
	if *noCont {
		off := false
		req.Continuation.Enabled = &off
	}
	if *metadata != "" {
		req.Metadata = json.RawMessage(*metadata)
	}
	// Validate before connecting, so bad input never touches a service;
	// every problem is named at once.
	if _, err := client.Validate(req); err != nil || len(zeros) > 0 {
		return refusal(carryovertype.MergeRequestErrors, zeros, err)
	}
	c, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	job, err := c.Enqueue(ctx, req)
	if err != nil {
		return err
	}
	if !*wait {
		fmt.Fprintln(stdout, job.ID)
		return nil
	}
	fmt.Fprintln(stderr, "job", job.ID)
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	st, err := c.Wait(ctx, job.ID, func(s client.Status) { fmt.Fprintln(stderr, progressLine(s)) })
	if err != nil {
		return fmt.Errorf("waiting for job %s: %w", job.ID, err)
	}
	return printOutcome(ctx, c, st, stdout, stderr)
}

// requestFlags and resumeFlags are the numeric flags whose fields' ranges
// may exclude 0, with the field each sets (as its JSON names it).
func requestFlags() map[string]string {
	return map[string]string{"max-output-tokens": "max_output_tokens", "max-attempts": "continuation.max_attempts",
		"max-total-output-tokens": "continuation.max_total_output_tokens", "max-cost-usd": "continuation.max_cost_usd",
		"time-limit-seconds": "continuation.time_limit_seconds", "max-records": "continuation.max_records",
		"overlap-lines": "continuation.overlap_lines", "max-output-tokens-ceiling": "continuation.max_output_tokens_ceiling"}
}

func resumeFlags() map[string]string {
	return map[string]string{"max-attempts": "max_attempts", "max-total-output-tokens": "max_total_output_tokens",
		"max-cost-usd": "max_cost_usd", "time-limit-seconds": "time_limit_seconds", "max-records": "max_records"}
}

// flagZeros names the field of every flag given on the command line as 0
// where the field's range excludes it: a flag left out takes the default,
// one given as 0 is refused, never read as the default (the flag's own
// default value is 0, so only flag.Visit, which sees the flags set, can
// tell the two apart).
func flagZeros(fs *flag.FlagSet, fields map[string]string) []client.FieldError {
	var out []client.FieldError
	fs.Visit(func(f *flag.Flag) {
		field, ok := fields[f.Name]
		if !ok {
			return
		}
		if v, err := strconv.ParseFloat(f.Value.String(), 64); err != nil || v != 0 {
			return
		}
		if fe := carryovertype.ExplicitZero(field); fe != nil {
			fe.Message = "--" + f.Name + " " + fe.Message
			out = append(out, *fe)
		}
	})
	return out
}

// policyFlag reads --error-policy as a JSON request's short form is read
// (nil when it is not given). One that cannot be read is a problem of field,
// added to problems to be named with the others; validation names every
// problem of one that can.
func policyFlag(s, field string, problems *[]client.FieldError) *client.ErrorPolicy {
	if s == "" {
		return nil
	}
	var p client.ErrorPolicy
	quoted, _ := json.Marshal(s)
	if err := json.Unmarshal(quoted, &p); err != nil {
		*problems = append(*problems, client.FieldError{Field: field, Message: "--error-policy " + err.Error()})
		return nil
	}
	return &p
}

// refusal is the *client.ValidationError naming the flags' problems and
// validation's (err), or err itself when it is not a validation error.
func refusal(merge func(...[]client.FieldError) []client.FieldError, flags []client.FieldError, err error) error {
	var ve *client.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	if ve != nil {
		flags = merge(flags, ve.Fields)
	}
	return &client.ValidationError{Fields: flags}
}

func progressLine(s client.Status) string {
	cost := money(s.CostUSD)
	if s.Chunks == 0 {
		cost = "-"
	}
	return fmt.Sprintf("  %-9s chunks=%d output_tokens=%d cost=%s%s", s.Status, s.Chunks, s.Tokens.Output, cost,
		func() string {
			if s.StopReason != "" {
				return " stop_reason=" + s.StopReason
			}
			return ""
		}())
}

func printOutcome(ctx context.Context, c *client.Client, st client.Status, stdout, stderr io.Writer) error {
	res, err := c.Result(ctx, st.ID)
	switch {
	case errors.Is(err, client.ErrNotReady):
		fmt.Fprintf(stderr, "job %s ended %s with no result: %s\n", st.ID, st.Status, st.Error)
		return exitError{1}
	case err != nil:
		return err
	}
	if _, err := io.WriteString(stdout, res.Content); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "job %s %s: %d chunks, stop_reason=%s, cost=%s\n", st.ID, st.Status, st.Chunks, st.StopReason, money(st.CostUSD))
	switch st.Status {
	case "succeeded":
		return nil
	case "partial":
		fmt.Fprintln(stderr, "partial result:", st.Error)
		return exitError{exitPartial}
	}
	fmt.Fprintln(stderr, "job failed:", st.Error)
	return exitError{1}
}

func runJobCommand(ctx context.Context, cfg config.Config, cmd string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("enqueue "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterStoreFlags(fs)
	asJSON := fs.Bool("json", false, "status: print JSON")
	allEvals := fs.Bool("evaluations", false, "status: every criterion's verdict at every chunk (default: the last chunk's)")
	meta := fs.Bool("meta", false, "result: print the metadata JSON instead of the content")
	timeout := fs.Duration("timeout", 0, "wait: give up after this long (0 = no limit)")
	var ro client.ResumeOptions
	fs.IntVar(&ro.MaxAttempts, "max-attempts", 0, "resume: the job's new most chunks, those stored included: more than them, at most 50 more")
	fs.Int64Var(&ro.MaxTotalOutputTokens, "max-total-output-tokens", 0, "resume: the new output-token budget")
	fs.Float64Var(&ro.MaxCostUSD, "max-cost-usd", 0, "resume: the new cost budget (USD)")
	fs.Float64Var(&ro.TimeLimitSeconds, "time-limit-seconds", 0, "resume: the new time limit, from the resume")
	fs.Int64Var(&ro.MaxRecords, "max-records", 0, "resume: the new record guard")
	policy := fs.String("error-policy", "", "resume: a new error policy (as for enqueue)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if cmd == "resume" {
		zeros := flagZeros(fs, resumeFlags())
		ro.ErrorPolicy = policyFlag(*policy, "error_policy", &zeros)
		// What depends on the job (max_attempts against its chunks) the
		// resume itself checks.
		if err := client.ValidateResume(ro); err != nil || len(zeros) > 0 {
			return refusal(carryovertype.MergeResumeErrors, zeros, err)
		}
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: enqueue %s ID", cmd)
	}
	id := pos[0]
	c, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	switch cmd {
	case "status":
		s, err := c.Status(ctx, id)
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}
		printStatus(stdout, s, *allEvals)
		return nil
	case "result":
		r, err := c.Result(ctx, id)
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		if *meta {
			var v any
			if err := json.Unmarshal(r.Metadata, &v); err != nil {
				return err
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		_, err = io.WriteString(stdout, r.Content)
		return err
	case "wait":
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		st, err := c.Wait(ctx, id, func(s client.Status) { fmt.Fprintln(stderr, progressLine(s)) })
		if err != nil {
			return fmt.Errorf("waiting for job %s: %w", id, err)
		}
		return printOutcome(ctx, c, st, stdout, stderr)
	case "resume":
		s, err := c.Resume(ctx, id, ro)
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "%s %s\n", s.ID, s.Status)
		return nil
	case "remerge":
		s, err := c.Remerge(ctx, id)
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "%s %s\n", s.ID, s.Status)
		return nil
	default: // cancel
		s, err := c.Cancel(ctx, id)
		if err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "%s %s\n", s.ID, s.Status)
		return nil
	}
}

func printStatus(w io.Writer, s client.Status, allEvals bool) {
	fmt.Fprintf(w, "job          %s\nstatus       %s\nmodel        %s\nformat       %s\nchunks       %d\n", s.ID, s.Status, s.Model, s.Format, s.Chunks)
	if s.StopReason != "" {
		fmt.Fprintf(w, "stop_reason  %s\n", s.StopReason)
	}
	if s.Error != "" {
		fmt.Fprintf(w, "error        %s\n", s.Error)
	}
	fmt.Fprintf(w, "tokens       input %d (cached %d), output %d (reasoning %d)\ncost         %s\ncreated      %s\n",
		s.Tokens.Input, s.Tokens.Cached, s.Tokens.Output, s.Tokens.Reasoning, money(s.CostUSD), s.CreatedAt.Format(time.RFC3339))
	if s.FinishedAt != nil {
		fmt.Fprintf(w, "finished     %s (%s)\n", s.FinishedAt.Format(time.RFC3339), s.FinishedAt.Sub(s.CreatedAt).Round(time.Millisecond))
	}
	if len(s.ChunkDetails) > 0 {
		fmt.Fprintf(w, "\n%4s  %-14s %8s %8s %8s  %s\n", "seq", "finish_reason", "bytes", "tokens", "ms", "decision")
		for i, c := range s.ChunkDetails {
			var o struct {
				Decision    string `json:"decision"`
				ResolvedBy  string `json:"resolved_by"`
				StopReason  string `json:"stop_reason"`
				Evaluations []struct {
					Criterion string `json:"criterion"`
					Decision  string `json:"decision"`
					Reason    string `json:"reason"`
				} `json:"evaluations"`
			}
			_ = json.Unmarshal(c.Decision, &o)
			d := strings.TrimSpace(fmt.Sprintf("%s by %s %s", o.Decision, o.ResolvedBy, o.StopReason))
			fmt.Fprintf(w, "%4d  %-14s %8d %8d %8d  %s\n", c.Seq, c.FinishReason, c.Size, c.OutputTokens, c.LatencyMS, d)
			if allEvals || i == len(s.ChunkDetails)-1 {
				for _, e := range o.Evaluations {
					fmt.Fprintf(w, "%50s  %s: %s (%s)\n", "", e.Criterion, e.Decision, e.Reason)
				}
			}
		}
	}
}

func money(v *float64) string {
	if v == nil {
		return "n/a (no price for the model)"
	}
	return fmt.Sprintf("$%.6f", *v)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
