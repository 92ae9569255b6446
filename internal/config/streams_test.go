package config

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/api"
)

// The API's bounds: defaults, the environment, flags over both, and a bad
// value named by its flag.
func TestAPIBounds(t *testing.T) {
	t.Setenv("CARRYOVER_STREAMS_PER_TENANT", "")
	t.Setenv("CARRYOVER_STREAMS_TOTAL", "")
	t.Setenv("CARRYOVER_STREAM_LIFETIME", "")
	t.Setenv("CARRYOVER_DB_ACQUIRE_TIMEOUT", "")
	if got, want := APIBoundsFromEnv(), (APIBounds{StreamsPerTenant: api.DefaultStreamsPerTenant, StreamsTotal: api.DefaultStreamsTotal,
		StreamLifetime: api.DefaultStreamLifetime, DBAcquireTimeout: DefaultDBAcquireTimeout}); got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	t.Setenv("CARRYOVER_STREAMS_PER_TENANT", "4")
	t.Setenv("CARRYOVER_STREAM_LIFETIME", "90s")
	b := APIBoundsFromEnv()
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	b.RegisterFlags(fs)
	if err := fs.Parse([]string{"--streams-total", "32", "--db-acquire-timeout", "2s"}); err != nil {
		t.Fatal(err)
	}
	if want := (APIBounds{StreamsPerTenant: 4, StreamsTotal: 32, StreamLifetime: 90 * time.Second, DBAcquireTimeout: 2 * time.Second}); b != want {
		t.Fatalf("env and flags %+v, want %+v", b, want)
	}
	if l := b.StreamLimits(); l != (api.StreamLimits{PerTenant: 4, Total: 32, Lifetime: 90 * time.Second}) {
		t.Fatalf("stream limits %+v", l)
	}
	for _, tc := range []struct {
		name string
		edit func(*APIBounds)
	}{
		{"streams-per-tenant", func(b *APIBounds) { b.StreamsPerTenant = 0 }},
		{"streams-total", func(b *APIBounds) { b.StreamsTotal = -1 }},
		{"stream-lifetime", func(b *APIBounds) { b.StreamLifetime = 0 }},
		{"db-acquire-timeout", func(b *APIBounds) { b.DBAcquireTimeout = -time.Second }},
	} {
		bad := b
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.name) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
}
