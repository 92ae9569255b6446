// Command enqueue submits carryover jobs and reads them back.
//
//	enqueue [--model M] [--format F] [--instructions S] [--max-output-tokens N] [--max-attempts N]
//	        [--on-failure P] [--tenant T] [--prompt-file FILE | --prompt TEXT | PROMPT] [--wait]
//	enqueue status ID [--json] [--evaluations]
//	enqueue result ID [--meta]
//	enqueue cancel ID
//	enqueue wait ID [--timeout D]
//	enqueue remerge ID
//	enqueue resume ID [--max-attempts N] [--max-total-output-tokens N] [--max-cost-usd X] [--time-limit-seconds S] [--max-records N] [--error-policy P]
//	enqueue help
//
// enqueue prints the job ID alone on stdout; with --wait it shows progress on
// stderr and prints the merged result on stdout.
//
// A bare word is a subcommand, never a prompt: a PROMPT argument is text of
// more than one word, and a one-word prompt is given with --prompt. So a
// typo of a subcommand (enqueue statsu ID, enqueue help) is refused with
// the usage and exit code 2 instead of queueing a paid job whose prompt is
// the typo.
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
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/cmdline"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/redisconn"
)

// Exit codes: 0 ok (or succeeded), 1 error (or failed/cancelled), 2 partial
// result, or a command line refused as written (cmdline.ExitUsage: the
// usage on stderr, nothing on stdout, nothing queued).
const exitPartial = 2

type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// subcommands are enqueue's subcommands; any other bare word is refused.
var subcommands = []string{"status", "result", "cancel", "wait", "remerge", "resume", "help"}

// idleHint is how long --wait and wait watch a job stay queued with no
// chunk before they check that a worker takes tasks from its queue.
const idleHint = 5 * time.Second

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: enqueue [flags] [--prompt-file FILE | --prompt TEXT | PROMPT] [--wait]
       enqueue status ID [--json] [--evaluations]
       enqueue result ID [--meta]
       enqueue cancel ID
       enqueue wait ID [--timeout D]
       enqueue remerge ID
       enqueue resume ID [--max-attempts N] [--max-total-output-tokens N] [--max-cost-usd X] [--time-limit-seconds S] [--max-records N] [--error-policy P]
       enqueue help
A PROMPT is quoted text of more than one word; a bare word is a subcommand (a one-word prompt: --prompt WORD).
Flags: enqueue -h; a subcommand's: enqueue SUBCOMMAND -h.
`)
}

func main() {
	// go-redis reports every failed dial of its pool on stderr before the
	// call returns its error; the CLI prints that error alone.
	redis.SetLogger(redisconn.Logger{Log: slog.New(slog.DiscardHandler)})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and returns the process's exit code.
func exitCode(err error, stderr io.Writer) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return cmdline.Exit("enqueue", err, stderr, usage)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return app{stdin: stdin, stdout: stdout, stderr: stderr, idleHint: idleHint}.run(ctx, args)
}

// app is one run of the command: its standard streams, and how long a wait
// watches a queued job before it looks for a worker.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	idleHint       time.Duration
}

func (a app) run(ctx context.Context, args []string) error {
	cfg := config.FromEnv()
	if len(args) > 0 && isWord(args[0]) {
		switch args[0] {
		case "help":
			usage(a.stderr)
			return nil
		case "status", "result", "cancel", "wait", "remerge", "resume":
			return a.runJobCommand(ctx, cfg, args[0], args[1:])
		}
		return notAPrompt(args[0])
	}
	return a.runEnqueue(ctx, cfg, args)
}

// isWord reports whether a positional argument is one bare word, which
// enqueue reads as a subcommand, never as a prompt.
func isWord(arg string) bool {
	return arg != "" && !strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, " \t\r\n")
}

// notAPrompt refuses a bare word that is no subcommand.
func notAPrompt(word string) error {
	return cmdline.Usagef("%v; a PROMPT is quoted text of more than one word, a one-word prompt is given with --prompt",
		cmdline.Unknown("enqueue", word, subcommands))
}

// parseInterleaved lets flags come before or after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := cmdline.Parse(fs, args); err != nil {
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

// connect opens the client; a read-only one (status, result) needs no Redis.
func connect(ctx context.Context, cfg config.Config, readOnly bool) (*client.Client, error) {
	// The CLI's own output is its report; only the client's warnings go to stderr.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return client.New(ctx, client.Config{DatabaseURL: cfg.DatabaseURL, RedisURL: cfg.RedisURL, ReadOnly: readOnly,
		ChunkQueue: cfg.ChunkQueue, MergeQueue: cfg.MergeQueue, ChunkLanes: cfg.ChunkLanes, Logger: quiet, WebhookAllow: cfg.WebhookAllow})
}

// enqueueFlags are the flags of a new job that do not map onto the request
// one to one.
type enqueueFlags struct {
	noCont                                         *bool
	prompt, promptFile, metadata, policy, strategy *string
	toolsFile, schemaFile                          *string
	wait                                           *bool
	timeout                                        *time.Duration
}

func registerEnqueueFlags(fs *flag.FlagSet, req *client.Request) enqueueFlags {
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
	fs.StringVar(&req.IdempotencyKey, "idempotency-key", "", "the same key returns the same job (per tenant)")
	fs.StringVar(&req.Tenant, "tenant", envOr("CARRYOVER_TENANT", carryovertype.DefaultTenant),
		"the tenant the job belongs to, as an API key of it sees it; it must exist (worker apikey create --tenant T makes it) (env CARRYOVER_TENANT)")
	fs.Int64Var(&req.Continuation.MaxRecords, "max-records", 0, "guard: stop once the answer holds this many records (CSV rows, JSON Lines, lines)")
	fs.IntVar(&req.Continuation.OverlapLines, "overlap-lines", 0, "overlap strategy: lines the model repeats (default by format)")
	fs.IntVar(&req.Continuation.MaxOutputTokensCeiling, "max-output-tokens-ceiling", 0, "reasoning models: raise a call's budget up to this when reasoning used it all")
	fs.BoolVar(&req.Stream, "stream", false, "stream model calls; a broken stream keeps the text received")
	return enqueueFlags{
		noCont:     fs.Bool("no-continuation", false, "do not continue a cut-off answer"),
		prompt:     fs.String("prompt", "", "the prompt, of any length (a PROMPT argument must be more than one word)"),
		promptFile: fs.String("prompt-file", "", "read the prompt from this file (- for stdin)"),
		metadata:   fs.String("metadata", "", "caller metadata, a JSON value stored with the job"),
		policy:     fs.String("error-policy", "", "what a failed call does: retry_transient_errors(N) (default, N=3: model, timeout and unknown errors retried), stop_on_any_error, retry_tool_errors(N), ignore_tool_errors or retry_all(N), then TYPE=stop|ignore|retry[:N] rules, comma separated"),
		strategy:   fs.String("strategy", "", "continuation strategy: stateful, history, prefill or overlap (default: the worker's provider's)"),
		toolsFile:  fs.String("tools-file", "", "JSON file of function tools offered to the model (Responses API shape)"),
		schemaFile: fs.String("json-schema-file", "", `JSON file {"name":...,"schema":{...},"strict":true}: structured output, validated after the merge`),
		wait:       fs.Bool("wait", false, "wait for the job, show progress on stderr, print the result on stdout"),
		timeout:    fs.Duration("timeout", 0, "with --wait: give up after this long (0 = no limit)"),
	}
}

// fill sets the request's fields that the flags give indirectly: files,
// the error policy, the strategy.
// A policy that cannot be read is added to problems, to be named with the
// others.
func (f enqueueFlags) fill(req *client.Request, problems *[]client.FieldError) error {
	req.Continuation.ErrorPolicy = policyFlag(*f.policy, "continuation.error_policy", problems)
	req.Continuation.Strategy = client.Strategy(*f.strategy)
	if *f.toolsFile != "" {
		b, err := os.ReadFile(*f.toolsFile)
		if err != nil {
			return fmt.Errorf("--tools-file: %w", err)
		}
		req.Tools = b
	}
	if *f.schemaFile != "" {
		b, err := os.ReadFile(*f.schemaFile)
		if err != nil {
			return fmt.Errorf("--json-schema-file: %w", err)
		}
		req.JSONSchema = &client.JSONSchema{}
		if err := json.Unmarshal(b, req.JSONSchema); err != nil {
			return fmt.Errorf("--json-schema-file: %w", err)
		}
	}
	if *f.noCont {
		off := false
		req.Continuation.Enabled = &off
	}
	if *f.metadata != "" {
		req.Metadata = json.RawMessage(*f.metadata)
	}
	return nil
}

// readPrompt reads the prompt from exactly one of --prompt-file, --prompt
// and the positional arguments.
func (a app) readPrompt(f enqueueFlags, pos []string) (string, error) {
	given := 0
	for _, g := range []bool{*f.promptFile != "", *f.prompt != "", len(pos) > 0} {
		if g {
			given++
		}
	}
	switch {
	case given > 1:
		return "", cmdline.Usagef("give one of --prompt-file, --prompt and PROMPT")
	case len(pos) > 0 && isWord(pos[0]):
		return "", notAPrompt(pos[0])
	case len(pos) > 1:
		return "", cmdline.Usagef("give the prompt as one argument (quote it); got %d arguments", len(pos))
	case len(pos) == 1:
		return pos[0], nil
	case *f.promptFile == "-":
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w", err)
		}
		return string(b), nil
	case *f.promptFile != "":
		b, err := os.ReadFile(*f.promptFile)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w", err)
		}
		return string(b), nil
	}
	return *f.prompt, nil
}

func (a app) runEnqueue(ctx context.Context, cfg config.Config, args []string) error {
	fs := flag.NewFlagSet("enqueue", flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	cfg.RegisterStoreFlags(fs)
	var req client.Request
	f := registerEnqueueFlags(fs, &req)
	fs.Usage = func() {
		usage(a.stderr)
		fmt.Fprintln(a.stderr, "flags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if req.Input.Prompt, err = a.readPrompt(f, pos); err != nil {
		return err
	}
	zeros := flagZeros(fs, requestFlags())
	if err := f.fill(&req, &zeros); err != nil {
		return err
	}
	// Validate before connecting, so bad input never touches a service;
	// every problem is named at once.
	if _, err := client.Validate(req); err != nil || len(zeros) > 0 {
		return refusal(carryovertype.MergeRequestErrors, zeros, err)
	}
	c, err := connect(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer c.Close()
	job, err := c.Enqueue(ctx, req)
	if err != nil {
		return err
	}
	if !*f.wait {
		fmt.Fprintln(a.stdout, job.ID)
		return nil
	}
	fmt.Fprintln(a.stderr, "job", job.ID)
	return a.waitFor(ctx, c, cfg, job.ID, *f.timeout)
}

// waitFor waits for the job, showing progress on stderr, then prints its
// outcome. A job still queued with no chunk after a.idleHint whose queue no
// live worker takes tasks from is said to be so, once: without a worker it
// would wait, silent, until the timeout.
func (a app) waitFor(ctx context.Context, c *client.Client, cfg config.Config, id string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var mu sync.Mutex
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(a.stderr, line)
	}
	hctx, stopHint := context.WithCancel(ctx)
	hinted := make(chan struct{})
	go func() {
		defer close(hinted)
		select {
		case <-hctx.Done():
		case <-time.After(a.idleHint):
			if line := idleLine(hctx, c, cfg, id); line != "" {
				say(line)
			}
		}
	}()
	st, err := c.Wait(ctx, id, func(s client.Status) { say(progressLine(s)) })
	stopHint()
	<-hinted
	if err != nil {
		return fmt.Errorf("waiting for job %s: %w", id, err)
	}
	return printOutcome(ctx, c, st, a.stdout, a.stderr)
}

// idleLine is the hint for a job nobody will run: still queued with no
// chunk, on a queue no live worker takes tasks from; "" otherwise.
func idleLine(ctx context.Context, c *client.Client, cfg config.Config, id string) string {
	st, err := c.Status(ctx, id)
	if err != nil || st.Status != "queued" || st.Chunks > 0 {
		return ""
	}
	queue, n, err := c.Consumers(ctx, id)
	if err != nil || n > 0 {
		return ""
	}
	return fmt.Sprintf("  no worker takes tasks from queue %q: the job waits until one starts "+
		"(worker, with CARRYOVER_QUEUE=%s and the same DATABASE_URL and REDIS_URL)", queue, cfg.ChunkQueue)
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
		printNextStep(stderr, st)
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
		printNextStep(stderr, st)
		return exitError{exitPartial}
	}
	fmt.Fprintln(stderr, "job failed:", st.Error)
	printNextStep(stderr, st)
	return exitError{1}
}

// printNextStep prints nextStep's suggestion, if it has one, on its own line.
func printNextStep(w io.Writer, st client.Status) {
	if hint := nextStep(st); hint != "" {
		fmt.Fprintln(w, hint)
	}
}

// resumeFlag is the resume flag that raises the limit a stop reason names.
func resumeFlag(stopReason string) string {
	switch stopReason {
	case "steps_limit_reached":
		return " --max-attempts N"
	case "token_limit_reached":
		return " --max-total-output-tokens N"
	case "cost_limit_reached":
		return " --max-cost-usd X"
	case "time_limit_reached":
		return " --time-limit-seconds S"
	}
	return ""
}

// nextStep says what a job that ended short of success can do next: a
// partial one (or one stopped by a limit, retries or a cancel) resumes
// from its last response, a cancelled one's stored chunks are merged by
// remerge. "" when there is nothing to suggest.
func nextStep(st client.Status) string {
	resume := fmt.Sprintf("  continue it from its last response: enqueue resume %s%s", st.ID, resumeFlag(st.StopReason))
	switch {
	case st.Status == "cancelled" && st.Chunks > 0:
		return fmt.Sprintf("  merge its %d stored chunks: enqueue remerge %s\n%s", st.Chunks, st.ID, resume)
	case st.Status == "cancelled":
		return "  it was cancelled before any chunk was stored: nothing to merge\n" + resume
	case st.Status == "partial", st.Status == "failed" && st.Chunks > 0 && st.StopReason != "completed":
		return resume
	case !st.Terminal():
		return fmt.Sprintf("  it is %s: enqueue wait %s waits for it", st.Status, st.ID)
	}
	return ""
}

// jobFlags are the flags of the subcommands that act on one job.
type jobFlags struct {
	asJSON, allEvals, meta *bool
	timeout                *time.Duration
	resume                 client.ResumeOptions
	policy                 *string
}

func registerJobFlags(fs *flag.FlagSet) *jobFlags {
	f := &jobFlags{
		asJSON:   fs.Bool("json", false, "status: print JSON"),
		allEvals: fs.Bool("evaluations", false, "status: every criterion's verdict at every chunk (default: the last chunk's)"),
		meta:     fs.Bool("meta", false, "result: print the metadata JSON instead of the content"),
		timeout:  fs.Duration("timeout", 0, "wait: give up after this long (0 = no limit)"),
	}
	fs.IntVar(&f.resume.MaxAttempts, "max-attempts", 0, "resume: the job's new most chunks, those stored included: more than them, at most 50 more")
	fs.Int64Var(&f.resume.MaxTotalOutputTokens, "max-total-output-tokens", 0, "resume: the new output-token budget")
	fs.Float64Var(&f.resume.MaxCostUSD, "max-cost-usd", 0, "resume: the new cost budget (USD)")
	fs.Float64Var(&f.resume.TimeLimitSeconds, "time-limit-seconds", 0, "resume: the new time limit, from the resume")
	fs.Int64Var(&f.resume.MaxRecords, "max-records", 0, "resume: the new record guard")
	f.policy = fs.String("error-policy", "", "resume: a new error policy (as for enqueue)")
	return f
}

func (a app) runJobCommand(ctx context.Context, cfg config.Config, cmd string, args []string) error {
	fs := flag.NewFlagSet("enqueue "+cmd, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	cfg.RegisterStoreFlags(fs)
	f := registerJobFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cmdline.Usagef("%s takes one job ID, got %d arguments", cmd, len(pos))
	}
	if cmd == "resume" {
		zeros := flagZeros(fs, resumeFlags())
		f.resume.ErrorPolicy = policyFlag(*f.policy, "error_policy", &zeros)
		// What depends on the job (max_attempts against its chunks) the
		// resume itself checks.
		if err := client.ValidateResume(f.resume); err != nil || len(zeros) > 0 {
			return refusal(carryovertype.MergeResumeErrors, zeros, err)
		}
	}
	id := pos[0]
	// Reading a job needs Postgres alone: status and result answer while
	// Redis is down.
	c, err := connect(ctx, cfg, cmd == "status" || cmd == "result")
	if err != nil {
		return err
	}
	defer c.Close()
	switch cmd {
	case "status":
		return a.status(ctx, c, id, f)
	case "result":
		return a.result(ctx, c, id, *f.meta)
	case "wait":
		return a.waitFor(ctx, c, cfg, id, *f.timeout)
	}
	var s client.Status
	switch cmd {
	case "resume":
		s, err = c.Resume(ctx, id, f.resume)
	case "remerge":
		s, err = c.Remerge(ctx, id)
	default: // cancel
		s, err = c.Cancel(ctx, id)
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	fmt.Fprintf(a.stdout, "%s %s\n", s.ID, s.Status)
	return nil
}

func (a app) status(ctx context.Context, c *client.Client, id string, f *jobFlags) error {
	s, err := c.Status(ctx, id)
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if *f.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	printStatus(a.stdout, s, *f.allEvals)
	return nil
}

// result prints the merged document (or its metadata); a partial one is
// followed on stderr by how to continue it, and a job with no result says
// what would give it one.
func (a app) result(ctx context.Context, c *client.Client, id string, meta bool) error {
	r, err := c.Result(ctx, id)
	if errors.Is(err, client.ErrNotReady) {
		if st, serr := c.Status(ctx, id); serr == nil {
			if hint := nextStep(st); hint != "" {
				return fmt.Errorf("job %s (%s): %w\n%s", id, st.Status, err, hint)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if meta {
		var v any
		if err := json.Unmarshal(r.Metadata, &v); err != nil {
			return err
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(v)
	} else {
		_, err = io.WriteString(a.stdout, r.Content)
	}
	if err == nil && r.Status == "partial" {
		if st, serr := c.Status(ctx, id); serr == nil {
			fmt.Fprintf(a.stderr, "job %s is partial (stop_reason=%s)\n%s\n", id, st.StopReason, nextStep(st))
		}
	}
	return err
}

func printStatus(w io.Writer, s client.Status, allEvals bool) {
	fmt.Fprintf(w, "job          %s\ntenant       %s\nstatus       %s\nmodel        %s\nformat       %s\nchunks       %d\n", s.ID, s.Tenant, s.Status, s.Model, s.Format, s.Chunks)
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
