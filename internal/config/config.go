// Package config reads carryover's settings from the environment, with
// command-line flags overriding them. Secrets are held here and never logged:
// String redacts them.
package config

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/egress"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/ratelimit"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/throttle"
)

// Defaults point at the local services of a development machine.
const (
	DefaultDatabaseURL = "postgres://root@127.0.0.1:5432/carryover?sslmode=disable"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
)

// Config holds every setting of the worker and the CLI.
type Config struct {
	DatabaseURL   string
	RedisURL      string
	OpenAIAPIKey  string // secret
	OpenAIBaseURL string
	Concurrency   int
	ChunkQueue    string
	MergeQueue    string
	// ChunkLanes is how many chunk queues tenants are spread over (see
	// jobs.Queues.Lanes); every process of a deployment must agree. 0 is
	// jobs.DefaultLanes.
	ChunkLanes        int
	LogLevel          string
	HealthAddr        string
	ReconcileInterval time.Duration
	StaleAfter        time.Duration
	MaxRetry          int
	PollInterval      time.Duration
	DelayedInterval   time.Duration
	Retention         time.Duration
	WebhookSecret     string // secret: whsec_<base64>
	// WebhookAllow is the webhook egress allow-list (egress.Parse's
	// syntax, e.g. "http,127.0.0.0/8,::1/128" for development); "" allows
	// only https to public addresses.
	WebhookAllow string
	// WebhookProxy is an http(s) proxy URL every webhook goes through; the
	// proxy is trusted to filter destinations itself.
	WebhookProxy string
	// WebhookConcurrency is how many webhook deliveries a worker runs at
	// once, on a queue and slots of their own.
	WebhookConcurrency int
	// Provider names the kind of server behind OPENAI_BASE_URL, which sets
	// the default strategy: openai (stateful, the Responses API), vllm
	// (prefill) or chat (history: any Chat Completions server).
	Provider string
	// Strategy overrides the provider's default strategy.
	Strategy string
	// CallTimeout bounds one model call (a timeout error under the error
	// policy); 0 leaves only the task's own timeout.
	CallTimeout time.Duration
	// PrefillFields is the JSON object a prefill request adds to its body
	// (default vLLM's continue_final_message/add_generation_prompt).
	PrefillFields string
	// Background runs stateful calls detached, in the Responses API's
	// background mode (provider openai only; a job may opt out).
	Background bool
	// BackgroundHold is the longest a chunk task waits on a background call
	// in its slot before it ends and polls later; 0 never holds.
	BackgroundHold time.Duration
	// DBConns caps the worker's pooled Postgres connections (its lock
	// session is one more), whatever the concurrency; 0 is DefaultDBConns.
	DBConns int
	// The API's limits (see APILimits and Quota). APIRate is each API key's
	// requests per second ("off" for none) and APIBurst its bucket;
	// APIAuthFailures is how many failed authentications a client may make
	// per minute before it is refused without a look at its key;
	// APITrustForwarded takes the client's address from the last
	// X-Forwarded-For entry (only behind a proxy that sets it).
	APIRate           string
	APIBurst          int
	APIAuthFailures   int
	APITrustForwarded bool
	// TenantMaxJobs caps each tenant's jobs in flight ("unlimited" for no
	// cap); TenantDailyUSD caps each tenant's spend per UTC day ("off" for
	// none). A tenant's row may override either (tenants.max_jobs_in_flight,
	// tenants.daily_spend_usd).
	TenantMaxJobs  string
	TenantDailyUSD string
	// MemoryLimit is the Go runtime's soft memory limit for the worker:
	// "auto" (90% of the container's limit, unless GOMEMLIMIT is set),
	// "off", or a size such as 1536MiB.
	MemoryLimit string
	// ProviderRPM and ProviderTPM are the provider deployment's requests
	// and tokens per minute, as throttle.ParseSetting reads them: a
	// default, then per-model overrides ("600,gpt-4o=100"); "" sets none.
	// ProviderThrottle "on" paces calls to them and to the limits the
	// provider's x-ratelimit-* headers state, across every worker; "off"
	// calls unpaced and meets 429s.
	ProviderRPM      string
	ProviderTPM      string
	ProviderThrottle string
}

// Defaults of the API's limits: a producer polling a few jobs or posting a
// batch stays well under 20 requests per second; 1,000 jobs in flight is
// more than a worker fleet of a few hundred slots works through at once.
const (
	DefaultAPIRate         = "20"
	DefaultAPIBurst        = 40
	DefaultAPIAuthFailures = 10
	DefaultTenantMaxJobs   = "1000"
)

// APILimits are the API's rate limits: each key's token bucket (nil when
// APIRate is "off") and each client's failed authentications per minute.
func (c Config) APILimits() (perKey *ratelimit.Rule, authFailures ratelimit.Rule, err error) {
	if c.APIAuthFailures < 1 {
		return nil, authFailures, fmt.Errorf("api-auth-failures must be at least 1, got %d", c.APIAuthFailures)
	}
	authFailures = ratelimit.Rule{Rate: float64(c.APIAuthFailures) / 60, Burst: c.APIAuthFailures}
	if strings.EqualFold(c.APIRate, "off") {
		return nil, authFailures, nil
	}
	rate, err := strconv.ParseFloat(c.APIRate, 64)
	if err != nil {
		return nil, authFailures, fmt.Errorf(`api-rate must be requests per second or "off", got %q`, c.APIRate)
	}
	r := ratelimit.Rule{Rate: rate, Burst: c.APIBurst}
	if err := r.Valid(); err != nil {
		return nil, authFailures, fmt.Errorf("api-rate, api-burst: %w", err)
	}
	return &r, authFailures, nil
}

// Quota is the operator's per-tenant quota.
func (c Config) Quota() (store.Quota, error) {
	var q store.Quota
	if strings.EqualFold(c.TenantMaxJobs, "unlimited") {
		q.MaxJobsInFlight = store.UnlimitedJobs
	} else if n, err := strconv.ParseInt(c.TenantMaxJobs, 10, 64); err != nil || n < 1 {
		return q, fmt.Errorf(`tenant-max-jobs must be a positive number or "unlimited", got %q`, c.TenantMaxJobs)
	} else {
		q.MaxJobsInFlight = n
	}
	if c.TenantDailyUSD != "" && !strings.EqualFold(c.TenantDailyUSD, "off") {
		usd, err := strconv.ParseFloat(c.TenantDailyUSD, 64)
		if err != nil || !(usd > 0) || math.IsInf(usd, 0) {
			return q, fmt.Errorf(`tenant-daily-usd must be a positive amount in USD or "off", got %q`, c.TenantDailyUSD)
		}
		q.DailySpendUSD = usd
	}
	return q, nil
}

// RegisterAPIFlags adds the API's limit flags.
func (c *Config) RegisterAPIFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.APIRate, "api-rate", c.APIRate, `requests per second each API key may make, shared by every API process on the Redis; "off" for no limit (env CARRYOVER_API_RATE)`)
	fs.IntVar(&c.APIBurst, "api-burst", c.APIBurst, "requests an API key may make at once, the size of its bucket (env CARRYOVER_API_BURST)")
	fs.IntVar(&c.APIAuthFailures, "api-auth-failures", c.APIAuthFailures, "failed authentications a client (IP address, IPv6 /64) may make per minute before it is refused without a look at its key (env CARRYOVER_API_AUTH_FAILURES)")
	fs.BoolVar(&c.APITrustForwarded, "api-trust-forwarded", c.APITrustForwarded, "take the client's address from the last X-Forwarded-For entry; only behind a proxy that sets it (env CARRYOVER_API_TRUST_FORWARDED)")
	fs.StringVar(&c.TenantMaxJobs, "tenant-max-jobs", c.TenantMaxJobs, `jobs each tenant may have queued, running or merging; "unlimited" for no cap; tenants.max_jobs_in_flight overrides it per tenant (env CARRYOVER_TENANT_MAX_JOBS)`)
	fs.StringVar(&c.TenantDailyUSD, "tenant-daily-usd", c.TenantDailyUSD, `estimated spend in USD each tenant's calls may reach per UTC day before new jobs are refused; "off" for no cap; tenants.daily_spend_usd overrides it per tenant (env CARRYOVER_TENANT_DAILY_USD)`)
}

// BackgroundOn reports whether stateful calls run detached: asked for, and
// the provider is OpenAI's Responses API (a chat or vLLM server keeps the
// synchronous path).
func (c Config) BackgroundOn() bool {
	return c.Background && (c.Provider == "" || c.Provider == "openai")
}

// DefaultWebhookConcurrency is Config.WebhookConcurrency by default.
const DefaultWebhookConcurrency = 8

// DefaultDBConns is the worker's Postgres pool by default: the chunk path
// holds a pooled connection only for single statements (its locks and
// saves go through the lock session), so a few serve any concurrency.
const DefaultDBConns = 6

// DefaultStrategy is the strategy for jobs that name none.
func (c Config) DefaultStrategy() string {
	if c.Strategy != "" {
		return c.Strategy
	}
	switch c.Provider {
	case "vllm":
		return "prefill"
	case "chat":
		return "history"
	}
	return "stateful"
}

// FromEnv reads the environment, falling back to defaults.
func FromEnv() Config {
	return Config{
		DatabaseURL:       env("DATABASE_URL", DefaultDatabaseURL),
		RedisURL:          env("REDIS_URL", DefaultRedisURL),
		OpenAIAPIKey:      os.Getenv("OPENAI_API_KEY"),
		OpenAIBaseURL:     os.Getenv("OPENAI_BASE_URL"),
		Concurrency:       envInt("WORKER_CONCURRENCY", 32),
		ChunkQueue:        env("CARRYOVER_QUEUE", "carryover"),
		MergeQueue:        os.Getenv("CARRYOVER_MERGE_QUEUE"),
		ChunkLanes:        envInt("CARRYOVER_CHUNK_LANES", jobs.DefaultLanes),
		LogLevel:          env("LOG_LEVEL", "info"),
		HealthAddr:        os.Getenv("HEALTH_ADDR"),
		ReconcileInterval: envDuration("CARRYOVER_RECONCILE_INTERVAL", 15*time.Second),
		StaleAfter:        envDuration("CARRYOVER_STALE_AFTER", 2*time.Minute),
		MaxRetry:          envInt("CARRYOVER_MAX_RETRY", jobs.DefaultTaskOptions().MaxRetry),
		PollInterval:      envDuration("CARRYOVER_POLL_INTERVAL", 50*time.Millisecond),
		DelayedInterval:   envDuration("CARRYOVER_DELAYED_INTERVAL", 250*time.Millisecond),
		Retention:         envDuration("CARRYOVER_RETENTION", 0),
		WebhookSecret:     os.Getenv("CARRYOVER_WEBHOOK_SECRET"),
		Provider:          env("CARRYOVER_PROVIDER", "openai"),
		Strategy:          os.Getenv("CARRYOVER_STRATEGY"),
		CallTimeout:       envDuration("CARRYOVER_CALL_TIMEOUT", 10*time.Minute),
		PrefillFields:     os.Getenv("CARRYOVER_PREFILL_FIELDS"),
		Background:        envBool("CARRYOVER_BACKGROUND", true),
		BackgroundHold:    envDuration("CARRYOVER_BACKGROUND_HOLD", jobs.DefaultBackgroundHold),
		DBConns:           envInt("CARRYOVER_DB_CONNS", DefaultDBConns),
		APIRate:           env("CARRYOVER_API_RATE", DefaultAPIRate),
		APIBurst:          envInt("CARRYOVER_API_BURST", DefaultAPIBurst),
		APIAuthFailures:   envInt("CARRYOVER_API_AUTH_FAILURES", DefaultAPIAuthFailures),
		APITrustForwarded: envBool("CARRYOVER_API_TRUST_FORWARDED", false),
		TenantMaxJobs:     env("CARRYOVER_TENANT_MAX_JOBS", DefaultTenantMaxJobs),
		TenantDailyUSD:    env("CARRYOVER_TENANT_DAILY_USD", "off"),
		MemoryLimit:       env("CARRYOVER_MEMORY_LIMIT", "auto"),
		ProviderRPM:       os.Getenv("CARRYOVER_PROVIDER_RPM"),
		ProviderTPM:       os.Getenv("CARRYOVER_PROVIDER_TPM"),
		ProviderThrottle:  env("CARRYOVER_PROVIDER_THROTTLE", "on"),

		WebhookAllow:       os.Getenv(egress.Setting),
		WebhookProxy:       os.Getenv("CARRYOVER_WEBHOOK_PROXY"),
		WebhookConcurrency: envInt("CARRYOVER_WEBHOOK_CONCURRENCY", DefaultWebhookConcurrency),
	}
}

// RegisterStoreFlags adds the flags every command shares.
func (c *Config) RegisterStoreFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "Postgres URL (env DATABASE_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis: redis://, rediss://, unix://, redis-sentinel://host:26379[,host:port…]/master[/db], redis-cluster://host:port[,host:port…] (env REDIS_URL)")
	fs.StringVar(&c.ChunkQueue, "queue", c.ChunkQueue, "asynq queue for chunk tasks (env CARRYOVER_QUEUE)")
	fs.StringVar(&c.MergeQueue, "merge-queue", c.MergeQueue, "asynq queue for merge tasks; default the chunk queue (env CARRYOVER_MERGE_QUEUE)")
	fs.IntVar(&c.ChunkLanes, "chunk-lanes", c.ChunkLanes, "chunk queues tenants are spread over, one lane per tenant (lane 0 is the queue itself, lane i <queue>.lane<i>), so one tenant's backlog does not delay another's; every producer and worker must agree; 1 is a single queue (env CARRYOVER_CHUNK_LANES)")
}

// RegisterWorkerFlags adds the worker's own flags.
func (c *Config) RegisterWorkerFlags(fs *flag.FlagSet) {
	c.RegisterStoreFlags(fs)
	fs.StringVar(&c.OpenAIBaseURL, "openai-base-url", c.OpenAIBaseURL, "OpenAI-compatible base URL (env OPENAI_BASE_URL)")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "tasks processed at once (env WORKER_CONCURRENCY)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (env LOG_LEVEL)")
	fs.StringVar(&c.HealthAddr, "health-addr", c.HealthAddr, "operator-only listener for /healthz, /readyz and /metrics, e.g. 127.0.0.1:9091 (not 8081, the API's --ops-addr default); empty disables (env HEALTH_ADDR)")
	fs.DurationVar(&c.ReconcileInterval, "reconcile-interval", c.ReconcileInterval, "reconciler scan interval (env CARRYOVER_RECONCILE_INTERVAL)")
	fs.DurationVar(&c.StaleAfter, "stale-after", c.StaleAfter, "re-queue live jobs with no progress for this long (env CARRYOVER_STALE_AFTER)")
	fs.IntVar(&c.MaxRetry, "max-retry", c.MaxRetry, "deliveries of a chunk task (rate-limit waits and error-policy retries included) before the job stops (env CARRYOVER_MAX_RETRY)")
	fs.StringVar(&c.Provider, "provider", c.Provider, "the server behind the base URL: openai (default strategy stateful), vllm (prefill) or chat (history) (env CARRYOVER_PROVIDER)")
	fs.DurationVar(&c.CallTimeout, "call-timeout", c.CallTimeout, "longest one model call may take; a slower one is a timeout error (env CARRYOVER_CALL_TIMEOUT)")
	fs.StringVar(&c.Strategy, "strategy", c.Strategy, "default continuation strategy: stateful, history, prefill or overlap; overrides the provider's (env CARRYOVER_STRATEGY)")
	fs.StringVar(&c.PrefillFields, "prefill-fields", c.PrefillFields, `JSON fields a prefill request adds, default {"continue_final_message":true,"add_generation_prompt":false} (env CARRYOVER_PREFILL_FIELDS)`)
	fs.DurationVar(&c.Retention, "retention", c.Retention, "remove chunk and result text of jobs finished longer ago than this, keeping every figure; 0 keeps everything (env CARRYOVER_RETENTION)")
	fs.DurationVar(&c.DelayedInterval, "delayed-interval", c.DelayedInterval, "how often retries and scheduled tasks are moved to the queue; asynq's 5s default would stretch a 1s Retry-After to 5s (env CARRYOVER_DELAYED_INTERVAL)")
	fs.BoolVar(&c.Background, "background", c.Background, "run stateful calls in the Responses API's background mode: a crash resumes the call instead of paying again, and the wait holds no task slot; provider openai only (env CARRYOVER_BACKGROUND)")
	fs.DurationVar(&c.BackgroundHold, "background-hold", c.BackgroundHold, "longest a task waits on a background call in its slot (only while at most half the slots are busy) before it polls later; 0 never holds (env CARRYOVER_BACKGROUND_HOLD)")
	fs.IntVar(&c.DBConns, "db-conns", c.DBConns, "pooled Postgres connections, whatever the concurrency; the lock session is one more; 0 is the default (env CARRYOVER_DB_CONNS)")
	c.RegisterMemoryLimitFlag(fs)
	c.RegisterWebhookAllowFlag(fs)
	fs.StringVar(&c.WebhookProxy, "webhook-proxy", c.WebhookProxy, "http(s) proxy URL every webhook goes through; the proxy filters destinations itself (env CARRYOVER_WEBHOOK_PROXY)")
	fs.IntVar(&c.WebhookConcurrency, "webhook-concurrency", c.WebhookConcurrency, "webhook deliveries at once, on their own queue and slots, apart from --concurrency (env CARRYOVER_WEBHOOK_CONCURRENCY)")
	fs.StringVar(&c.ProviderRPM, "provider-rpm", c.ProviderRPM, `the provider's requests per minute, shared by every worker: a default, then per-model overrides, e.g. "600,gpt-4o=100,gpt-4.1-mini=500"; empty or 0 for none (env CARRYOVER_PROVIDER_RPM)`)
	fs.StringVar(&c.ProviderTPM, "provider-tpm", c.ProviderTPM, `the provider's tokens per minute (input plus output budget), shared by every worker, in --provider-rpm's form, e.g. "200000,gpt-4o=30000" (env CARRYOVER_PROVIDER_TPM)`)
	fs.StringVar(&c.ProviderThrottle, "provider-throttle", c.ProviderThrottle, "on: pace model calls to --provider-rpm/--provider-tpm and to the limits the provider's x-ratelimit-* headers state, re-scheduling a chunk that must wait; off: call unpaced and wait out 429s (env CARRYOVER_PROVIDER_THROTTLE)")
	fs.DurationVar(&c.PollInterval, "poll-interval", c.PollInterval, "how often an idle worker looks for tasks; asynq's 1s default stalls chained tasks (env CARRYOVER_POLL_INTERVAL)")
}

// Queues are the queues the configuration names.
func (c Config) Queues() jobs.Queues {
	return jobs.Queues{Chunk: c.ChunkQueue, Merge: c.MergeQueueOrDefault(), Lanes: c.ChunkLanes}
}

// RegisterMemoryLimitFlag adds --memory-limit, which the worker and the API
// process share.
func (c *Config) RegisterMemoryLimitFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "the Go runtime's soft memory limit: auto (90% of the container's cgroup limit, unless GOMEMLIMIT is set), off, or a size like 1536MiB (env CARRYOVER_MEMORY_LIMIT)")
}

// RegisterWebhookAllowFlag adds --webhook-allow, which the worker and the
// API process share: the API refuses URLs it says no to, the worker checks
// every connection against it.
func (c *Config) RegisterWebhookAllowFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.WebhookAllow, "webhook-allow", c.WebhookAllow, `webhook egress allow-list for development, comma-separated: "http", CIDR prefixes, addresses, host names, e.g. "http,127.0.0.0/8,::1/128"; empty allows only https to public addresses (env `+egress.Setting+`)`)
}

// MergeQueueOrDefault is the merge queue, or the chunk queue when unset.
func (c Config) MergeQueueOrDefault() string {
	if c.MergeQueue != "" {
		return c.MergeQueue
	}
	return c.ChunkQueue
}

// Logger builds the process's slog logger (JSON to stderr).
func (c Config) Logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", c.LogLevel, err)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// Validate checks the worker's settings, naming the bad one.
func (c Config) Validate() error {
	switch {
	case c.OpenAIAPIKey == "":
		return fmt.Errorf("OPENAI_API_KEY is not set (for the simulator any non-empty value works)")
	case c.Concurrency < 1:
		return fmt.Errorf("concurrency must be at least 1, got %d", c.Concurrency)
	case c.ChunkQueue == "":
		return fmt.Errorf("queue must not be empty")
	case c.ChunkLanes < 0 || c.ChunkLanes > jobs.MaxLanes:
		return fmt.Errorf("chunk-lanes must be between 1 and %d (0 for the default, %d), got %d", jobs.MaxLanes, jobs.DefaultLanes, c.ChunkLanes)
	case c.DBConns < 0:
		return fmt.Errorf("db-conns must not be negative, got %d", c.DBConns)
	case c.BackgroundHold < 0:
		return fmt.Errorf("background-hold must not be negative, got %s", c.BackgroundHold)
	case c.MaxRetry < 0:
		return fmt.Errorf("max-retry must not be negative, got %d", c.MaxRetry)
	case c.Provider != "" && c.Provider != "openai" && c.Provider != "vllm" && c.Provider != "chat":
		return fmt.Errorf("provider must be openai, vllm or chat, got %q", c.Provider)
	case c.WebhookConcurrency < 0:
		return fmt.Errorf("webhook-concurrency must not be negative, got %d", c.WebhookConcurrency)
	}
	if _, err := egress.Parse(c.WebhookAllow); err != nil {
		return err
	}
	if _, err := c.Throttle(); err != nil {
		return err
	}
	if _, err := egress.ParseProxy(c.WebhookProxy); err != nil {
		return err
	}
	if !carryovertype.ValidStrategy(carryovertype.Strategy(c.DefaultStrategy())) {
		return fmt.Errorf("strategy must be one of %v, got %q", carryovertype.Strategies(), c.Strategy)
	}
	_, err := c.Prefill()
	return err
}

// Prefill decodes PrefillFields: the request fields a prefill call adds
// (nil for the provider's defaults).
func (c Config) Prefill() (map[string]any, error) {
	if c.PrefillFields == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(c.PrefillFields), &m); err != nil {
		return nil, fmt.Errorf("prefill-fields must be a JSON object: %v", err)
	}
	return m, nil
}

func env(key, def string) string {
	if v := strings.TrimSpace(os.Getenv(key)); v != "" {
		return v
	}
	return def
}

func envBool(key string, def bool) bool {
	if v, err := strconv.ParseBool(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// Throttle is the provider throttle's configuration, nil when off.
func (c Config) Throttle() (*throttle.Config, error) {
	switch c.ProviderThrottle {
	case "", "on":
	case "off":
		return nil, nil
	default:
		return nil, fmt.Errorf("provider-throttle (CARRYOVER_PROVIDER_THROTTLE) must be on or off, got %q", c.ProviderThrottle)
	}
	rpm, err := throttle.ParseSetting("provider-rpm (CARRYOVER_PROVIDER_RPM)", c.ProviderRPM)
	if err != nil {
		return nil, err
	}
	tpm, err := throttle.ParseSetting("provider-tpm (CARRYOVER_PROVIDER_TPM)", c.ProviderTPM)
	if err != nil {
		return nil, err
	}
	return &throttle.Config{BaseURL: c.OpenAIBaseURL, RPM: rpm, TPM: tpm, Learn: true, Prefix: "carryover:" + c.ChunkQueue + ":"}, nil
}
