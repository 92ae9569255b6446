package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/carryover/carryover/internal/ratelimit"
)

// Limits bound what one API key, and one client, may ask of the API. The
// buckets live in Redis, so every API process on the same Redis shares them.
type Limits struct {
	Limiter *ratelimit.Limiter
	// PerKey is each API key's request rate; nil sets none.
	PerKey *ratelimit.Rule
	// AuthFailures is each client's budget of failed authentications: once
	// it is spent the client is refused before its key is looked at.
	AuthFailures ratelimit.Rule
	// TrustForwarded takes the client's address from the last
	// X-Forwarded-For entry, which a proxy in front of the API appends;
	// without a proxy a client would choose its own address.
	TrustForwarded bool
}

// Option configures a Server.
type Option func(*Server)

// WithLimits has the server rate-limit keys and throttle failed
// authentication; without it the server limits nothing.
func WithLimits(l Limits) Option {
	return func(s *Server) { s.limits = &l }
}

// clientOf is the address failed authentications are counted against: the
// peer's IP, or a whole IPv6 /64 (one host usually holds one).
func (s *Server) clientOf(r *http.Request) string {
	addr := r.RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	if s.limits.TrustForwarded {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			parts := strings.Split(xff[len(xff)-1], ",")
			if last := strings.TrimSpace(parts[len(parts)-1]); last != "" {
				addr = last
			}
		}
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "unparsed:" + addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// keyID names an API key's bucket without the key itself.
func keyID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:12])
}

// authThrottled reports, and answers, a client whose failed
// authentications are spent: it waits before trying any key again.
func (s *Server) authThrottled(w http.ResponseWriter, r *http.Request, client string) bool {
	if s.limits == nil {
		return false
	}
	ok, wait, err := s.limits.Limiter.Check(r.Context(), "authfail:"+client, s.limits.AuthFailures)
	if err != nil {
		// Redis down: the API still answers (fail open), and says so.
		s.log.WarnContext(r.Context(), "auth throttle unavailable", "err", err)
		return false
	}
	if ok {
		return false
	}
	tooMany(w, wait, "too many failed authentications", "this client failed to authenticate too often; wait before trying again")
	return true
}

// authFailed counts a failed authentication against the client.
func (s *Server) authFailed(r *http.Request, client string) {
	if s.limits == nil {
		return
	}
	if _, _, err := s.limits.Limiter.Take(r.Context(), "authfail:"+client, s.limits.AuthFailures); err != nil {
		s.log.WarnContext(r.Context(), "auth throttle unavailable", "err", err)
	}
}

// rateLimited reports, and answers, a request past its key's rate.
func (s *Server) rateLimited(w http.ResponseWriter, r *http.Request, key string) bool {
	if s.limits == nil || s.limits.PerKey == nil {
		return false
	}
	ok, wait, err := s.limits.Limiter.Take(r.Context(), "key:"+keyID(key), *s.limits.PerKey)
	if err != nil {
		s.log.WarnContext(r.Context(), "rate limit unavailable", "err", err)
		return false
	}
	if ok {
		return false
	}
	tooMany(w, wait, "rate limit exceeded", "this API key made more requests than its rate allows; wait before the next")
	return true
}

// tooMany answers 429 with Retry-After in whole seconds, rounded up.
func tooMany(w http.ResponseWriter, wait time.Duration, title, detail string) {
	w.Header().Set("Retry-After", ratelimit.RetryAfter(wait))
	problem(w, http.StatusTooManyRequests, title, detail)
}
