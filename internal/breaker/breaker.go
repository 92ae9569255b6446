// Package breaker keeps a circuit breaker per endpoint, so that deliveries
// to an endpoint that keeps failing (down, or a tarpit that holds every
// connection until the timeout) fail fast instead of holding a delivery
// slot each time.
//
// After Threshold failures in a row an endpoint's circuit opens for a
// cool-down; while open, Allow refuses at once. When the cool-down ends one
// delivery is let through as a probe (and the circuit re-armed for another
// cool-down meanwhile): its success closes the circuit, its failure opens
// it again for twice as long, up to MaxCooldown.
//
// The state lives in the process: each worker learns about an endpoint on
// its own, which costs at most Threshold failed deliveries per worker.
package breaker

import (
	"fmt"
	"sync"
	"time"
)

// Config configures a Breaker; zero fields take the defaults.
type Config struct {
	Threshold   int           // failures in a row that open a circuit; default 5
	Cooldown    time.Duration // first cool-down; default 1 minute
	MaxCooldown time.Duration // longest cool-down; default 30 minutes
	// MaxEndpoints bounds the endpoints remembered; past it, the closed
	// and lapsed ones are forgotten. Default 10,000.
	MaxEndpoints int
	Now          func() time.Time // default time.Now
}

// Breaker is safe for concurrent use.
type Breaker struct {
	cfg       Config
	mu        sync.Mutex
	endpoints map[string]*state
}

// state is one endpoint's: failures in a row, and when open, until when.
type state struct {
	failures  int
	cooldown  time.Duration // the last cool-down, doubled at each failed probe
	openUntil time.Time     // zero while closed
	probing   bool          // a probe was let through and has not failed yet
}

// New returns a Breaker with cfg's settings.
func New(cfg Config) *Breaker {
	if cfg.Threshold <= 0 {
		cfg.Threshold = 5
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = time.Minute
	}
	if cfg.MaxCooldown < cfg.Cooldown {
		cfg.MaxCooldown = max(cfg.Cooldown, 30*time.Minute)
	}
	if cfg.MaxEndpoints <= 0 {
		cfg.MaxEndpoints = 10_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg, endpoints: map[string]*state{}}
}

// OpenError is Allow's refusal.
type OpenError struct {
	Endpoint string
	Failures int
	Until    time.Time
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("circuit open for %s after %d failures in a row; not tried again before %s",
		e.Endpoint, e.Failures, e.Until.UTC().Format(time.RFC3339))
}

// Allow returns nil when a delivery to endpoint may go ahead, or an
// *OpenError while its circuit is open. When a cool-down has just ended it
// lets this one delivery through as the probe and keeps the others out for
// another cool-down.
func (b *Breaker) Allow(endpoint string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.endpoints[endpoint]
	if s == nil || s.openUntil.IsZero() {
		return nil
	}
	now := b.cfg.Now()
	if now.Before(s.openUntil) {
		return &OpenError{Endpoint: endpoint, Failures: s.failures, Until: s.openUntil}
	}
	s.openUntil = now.Add(s.cooldown) // the probe's turn; the rest wait
	s.probing = true
	return nil
}

// Success closes endpoint's circuit.
func (b *Breaker) Success(endpoint string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.endpoints, endpoint)
}

// Failure counts a failed delivery to endpoint, opening its circuit at the
// threshold, or again, for twice as long, when it was a probe's.
func (b *Breaker) Failure(endpoint string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.endpoints[endpoint]
	if s == nil {
		if len(b.endpoints) >= b.cfg.MaxEndpoints {
			b.forget()
		}
		s = &state{}
		b.endpoints[endpoint] = s
	}
	s.failures++
	now := b.cfg.Now()
	switch {
	case s.probing:
		// The probe failed: open again, for longer.
		s.probing = false
		s.cooldown = min(2*s.cooldown, b.cfg.MaxCooldown)
		s.openUntil = now.Add(s.cooldown)
	case !s.openUntil.IsZero():
		// A delivery that started before the circuit opened.
	case s.failures >= b.cfg.Threshold:
		s.cooldown = b.cfg.Cooldown
		s.openUntil = now.Add(s.cooldown)
	}
}

// forget drops the endpoints whose circuit is closed or whose cool-down
// has lapsed, to bound the memory an endless variety of endpoints takes.
func (b *Breaker) forget() {
	now := b.cfg.Now()
	for k, s := range b.endpoints {
		if s.openUntil.IsZero() || !now.Before(s.openUntil) {
			delete(b.endpoints, k)
		}
	}
}
