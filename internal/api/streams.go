package api

import (
	"fmt"
	"sync"
	"time"
)

// Defaults of StreamLimits: a tenant's dashboard or a few producers
// watching their jobs fit well within them, and a process's open streams
// cost it only memory and a goroutine each (none holds a database
// connection).
const (
	DefaultStreamsPerTenant = 16
	DefaultStreamsTotal     = 256
	DefaultStreamLifetime   = 10 * time.Minute
)

// streamRetryAfter is the Retry-After (seconds) of a refused stream, and
// streamRetryMillis the SSE retry hint sent when a stream's lifetime ends.
const (
	streamRetryAfter  = 10
	streamRetryMillis = 1000
)

// StreamLimits bound the progress streams (GET /v1/jobs/{id}/stream) of one
// API process. A zero field takes its default.
type StreamLimits struct {
	// PerTenant caps a tenant's open streams; past it a stream is a 429.
	PerTenant int
	// Total caps the process's open streams, every tenant's together.
	Total int
	// Lifetime ends a stream after this long with an SSE retry hint; the
	// client reconnects with Last-Event-ID. It bounds what an abandoned
	// connection holds.
	Lifetime time.Duration
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.PerTenant <= 0 {
		l.PerTenant = DefaultStreamsPerTenant
	}
	if l.Total <= 0 {
		l.Total = DefaultStreamsTotal
	}
	if l.Lifetime <= 0 {
		l.Lifetime = DefaultStreamLifetime
	}
	return l
}

// WithStreamLimits sets the bounds on open progress streams.
func WithStreamLimits(l StreamLimits) Option {
	return func(s *Server) { s.streams = newStreamSlots(l) }
}

// streamSlots counts the open streams, per tenant and in all.
type streamSlots struct {
	lim       StreamLimits
	mu        sync.Mutex
	total     int
	perTenant map[string]int
}

func newStreamSlots(l StreamLimits) *streamSlots {
	return &streamSlots{lim: l.withDefaults(), perTenant: map[string]int{}}
}

// take opens a stream for tenant; it returns the function that closes it,
// or why it is refused.
func (s *streamSlots) take(tenant string) (release func(), refused string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.perTenant[tenant]; n >= s.lim.PerTenant {
		return nil, fmt.Sprintf("this tenant has %d open streams, the most allowed; close one or retry later", n)
	}
	if s.total >= s.lim.Total {
		return nil, fmt.Sprintf("this server has %d open streams, the most it serves; retry later", s.total)
	}
	s.total++
	s.perTenant[tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.perTenant[tenant]--; s.perTenant[tenant] == 0 {
				delete(s.perTenant, tenant)
			}
		})
	}, ""
}
