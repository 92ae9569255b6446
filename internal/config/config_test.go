package config

import (
	"strings"
	"testing"
)

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
