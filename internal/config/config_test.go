package config

import (
	"strings"
	"testing"

	"github.com/carryover/carryover/internal/store"
)

// The limits' settings: sensible defaults, explicit words for "no limit",
// and an error naming the setting for anything else (0 included).
func TestLimitSettings(t *testing.T) {
	t.Setenv("CARRYOVER_API_RATE", "")
	t.Setenv("CARRYOVER_TENANT_MAX_JOBS", "")
	t.Setenv("CARRYOVER_TENANT_DAILY_USD", "")
	def := FromEnv()
	perKey, auth, err := def.APILimits()
	if err != nil || perKey == nil || perKey.Rate != 20 || perKey.Burst != 40 || auth.Burst != 10 {
		t.Fatalf("default rate limits: %+v %+v %v", perKey, auth, err)
	}
	if q, err := def.Quota(); err != nil || q.MaxJobsInFlight != 1000 || q.DailySpendUSD != 0 {
		t.Fatalf("default quota: %+v %v", q, err)
	}
	for _, c := range []struct {
		name    string
		change  func(*Config)
		wantErr string
		check   func(*Config) bool
	}{
		{"rate off", func(c *Config) { c.APIRate = "off" }, "", func(c *Config) bool { r, _, _ := c.APILimits(); return r == nil }},
		{"rate zero", func(c *Config) { c.APIRate = "0" }, "api-rate", nil},
		{"rate junk", func(c *Config) { c.APIRate = "fast" }, "api-rate", nil},
		{"burst zero", func(c *Config) { c.APIBurst = 0 }, "api-burst", nil},
		{"auth failures zero", func(c *Config) { c.APIAuthFailures = 0 }, "api-auth-failures", nil},
		{"jobs unlimited", func(c *Config) { c.TenantMaxJobs = "unlimited" }, "",
			func(c *Config) bool { q, _ := c.Quota(); return q.MaxJobsInFlight == store.UnlimitedJobs }},
		{"jobs zero", func(c *Config) { c.TenantMaxJobs = "0" }, "tenant-max-jobs", nil},
		{"spend cap", func(c *Config) { c.TenantDailyUSD = "25.5" }, "", func(c *Config) bool { q, _ := c.Quota(); return q.DailySpendUSD == 25.5 }},
		{"spend zero", func(c *Config) { c.TenantDailyUSD = "0" }, "tenant-daily-usd", nil},
	} {
		cfg := def
		c.change(&cfg)
		_, _, err1 := cfg.APILimits()
		_, err2 := cfg.Quota()
		err := err1
		if err == nil {
			err = err2
		}
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.wantErr)
		case c.check != nil && !c.check(&cfg):
			t.Errorf("%s: not applied", c.name)
		}
	}
}

// The webhook settings are checked at start, naming the setting at fault.
func TestValidateWebhookSettings(t *testing.T) {
	t.Parallel()
	base := Config{OpenAIAPIKey: "sk-test", Concurrency: 1, ChunkQueue: "q", Provider: "openai"}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"development allow-list", func(c *Config) { c.WebhookAllow = "http,127.0.0.0/8,::1/128,localhost" }, ""},
		{"bad allow entry", func(c *Config) { c.WebhookAllow = "http,127.0.0.0/88" }, "CARRYOVER_WEBHOOK_ALLOW"},
		{"a single-label host name (docker compose)", func(c *Config) { c.WebhookAllow = "http,receiver" }, ""},
		{"a URL instead of a host", func(c *Config) { c.WebhookAllow = "http://receiver:8080" }, "CARRYOVER_WEBHOOK_ALLOW"},
		{"proxy", func(c *Config) { c.WebhookProxy = "http://proxy.internal:3128" }, ""},
		{"bad proxy", func(c *Config) { c.WebhookProxy = "socks5://proxy.internal:1080" }, "CARRYOVER_WEBHOOK_PROXY"},
		{"negative concurrency", func(c *Config) { c.WebhookConcurrency = -1 }, "webhook-concurrency"},
	} {
		cfg := base
		c.edit(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
}

// The webhook settings are read from the environment, with their defaults.
func TestFromEnvWebhookSettings(t *testing.T) {
	t.Setenv("CARRYOVER_WEBHOOK_ALLOW", "")
	t.Setenv("CARRYOVER_WEBHOOK_PROXY", "")
	t.Setenv("CARRYOVER_WEBHOOK_CONCURRENCY", "")
	if c := FromEnv(); c.WebhookAllow != "" || c.WebhookProxy != "" || c.WebhookConcurrency != DefaultWebhookConcurrency {
		t.Fatalf("defaults: %q %q %d", c.WebhookAllow, c.WebhookProxy, c.WebhookConcurrency)
	}
	t.Setenv("CARRYOVER_WEBHOOK_ALLOW", "http,127.0.0.0/8")
	t.Setenv("CARRYOVER_WEBHOOK_PROXY", "http://proxy.internal:3128")
	t.Setenv("CARRYOVER_WEBHOOK_CONCURRENCY", "3")
	if c := FromEnv(); c.WebhookAllow != "http,127.0.0.0/8" || c.WebhookProxy != "http://proxy.internal:3128" || c.WebhookConcurrency != 3 {
		t.Fatalf("from the environment: %q %q %d", c.WebhookAllow, c.WebhookProxy, c.WebhookConcurrency)
	}
}

// The provider throttle's settings are checked at start, naming the
// setting at fault; on by default, learning from headers, off on request.
func TestProviderThrottleSettings(t *testing.T) {
	t.Parallel()
	base := Config{OpenAIAPIKey: "sk-test", Concurrency: 1, ChunkQueue: "q", Provider: "openai", OpenAIBaseURL: "http://127.0.0.1:8089/v1"}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"limits", func(c *Config) { c.ProviderRPM, c.ProviderTPM = "600,gpt-4o=100", "200000,gpt-4o=30000" }, ""},
		{"bad rpm", func(c *Config) { c.ProviderRPM = "fast" }, "CARRYOVER_PROVIDER_RPM"},
		{"negative tpm", func(c *Config) { c.ProviderTPM = "gpt-4o=-1" }, "CARRYOVER_PROVIDER_TPM"},
		{"bad switch", func(c *Config) { c.ProviderThrottle = "maybe" }, "CARRYOVER_PROVIDER_THROTTLE"},
		{"off", func(c *Config) { c.ProviderThrottle = "off" }, ""},
	} {
		cfg := base
		c.edit(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.want)
		}
	}
	tc, err := base.Throttle()
	if err != nil || tc == nil || !tc.Learn || tc.BaseURL != base.OpenAIBaseURL || tc.Prefix != "carryover:q:" {
		t.Fatalf("default throttle: %+v %v", tc, err)
	}
	off := base
	off.ProviderThrottle = "off"
	if tc, err := off.Throttle(); tc != nil || err != nil {
		t.Fatalf("off: %+v %v", tc, err)
	}
}
