package config

import (
	"flag"
	"fmt"
	"time"

	"github.com/carryover/carryover/internal/api"
)

// DefaultDBAcquireTimeout bounds how long an API request waits for a pooled
// Postgres connection before it is answered 503.
const DefaultDBAcquireTimeout = 5 * time.Second

// APIBounds are the API process's bounds on what its requests hold: open
// progress streams (per tenant, in all, and how long each lives) and the
// wait for a database connection.
type APIBounds struct {
	StreamsPerTenant int           // CARRYOVER_STREAMS_PER_TENANT
	StreamsTotal     int           // CARRYOVER_STREAMS_TOTAL
	StreamLifetime   time.Duration // CARRYOVER_STREAM_LIFETIME
	DBAcquireTimeout time.Duration // CARRYOVER_DB_ACQUIRE_TIMEOUT
}

// APIBoundsFromEnv reads the API's bounds from the environment, falling back
// to the defaults.
func APIBoundsFromEnv() APIBounds {
	return APIBounds{
		StreamsPerTenant: envInt("CARRYOVER_STREAMS_PER_TENANT", api.DefaultStreamsPerTenant),
		StreamsTotal:     envInt("CARRYOVER_STREAMS_TOTAL", api.DefaultStreamsTotal),
		StreamLifetime:   envDuration("CARRYOVER_STREAM_LIFETIME", api.DefaultStreamLifetime),
		DBAcquireTimeout: envDuration("CARRYOVER_DB_ACQUIRE_TIMEOUT", DefaultDBAcquireTimeout),
	}
}

// RegisterFlags adds the API's bound flags.
func (b *APIBounds) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&b.StreamsPerTenant, "streams-per-tenant", b.StreamsPerTenant, "open progress streams a tenant may hold on this API process; past it a stream is answered 429 (env CARRYOVER_STREAMS_PER_TENANT)")
	fs.IntVar(&b.StreamsTotal, "streams-total", b.StreamsTotal, "open progress streams this API process serves, every tenant's together; past it a stream is answered 429 (env CARRYOVER_STREAMS_TOTAL)")
	fs.DurationVar(&b.StreamLifetime, "stream-lifetime", b.StreamLifetime, "longest a progress stream stays open; then it sends an SSE retry hint and closes, and the client reconnects with Last-Event-ID (env CARRYOVER_STREAM_LIFETIME)")
	fs.DurationVar(&b.DBAcquireTimeout, "db-acquire-timeout", b.DBAcquireTimeout, "longest a request waits for a pooled Postgres connection before it is answered 503 (env CARRYOVER_DB_ACQUIRE_TIMEOUT)")
}

// Validate checks the bounds, naming the bad one.
func (b APIBounds) Validate() error {
	switch {
	case b.StreamsPerTenant < 1:
		return fmt.Errorf("streams-per-tenant must be at least 1, got %d", b.StreamsPerTenant)
	case b.StreamsTotal < 1:
		return fmt.Errorf("streams-total must be at least 1, got %d", b.StreamsTotal)
	case b.StreamLifetime <= 0:
		return fmt.Errorf("stream-lifetime must be positive, got %s", b.StreamLifetime)
	case b.DBAcquireTimeout <= 0:
		return fmt.Errorf("db-acquire-timeout must be positive, got %s", b.DBAcquireTimeout)
	}
	return nil
}

// StreamLimits are the bounds as the API server takes them.
func (b APIBounds) StreamLimits() api.StreamLimits {
	return api.StreamLimits{PerTenant: b.StreamsPerTenant, Total: b.StreamsTotal, Lifetime: b.StreamLifetime}
}
