package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/carryover/carryover/internal/store"
)

// Cost estimates a call's price in USD, or nil when the model has no price:
// an invented price is worse than none. Cached input is billed at the cached
// rate (the input rate when none is listed); reasoning tokens are already
// inside output tokens and are never billed twice.
func Cost(p *store.Price, u store.Usage) *float64 {
	if p == nil {
		return nil
	}
	cachedRate := p.Input
	if p.CachedInput != nil {
		cachedRate = *p.CachedInput
	}
	cached := min(u.Cached, u.Input)
	usd := (float64(u.Input-cached)*p.Input + float64(cached)*cachedRate + float64(u.Output)*p.Output) / 1e6
	return &usd
}

// priceCache keeps model prices in the worker for a short while: prices change
// a few times a year, and looking them up on every chunk would put a join on
// the hot path.
type priceCache struct {
	store *store.Store
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]cachedPrice
}

type cachedPrice struct {
	price *store.Price
	at    time.Time
}

// maxCachedPrices bounds the models a priceCache holds at once.
const maxCachedPrices = 1024

func newPriceCache(s *store.Store, ttl time.Duration) *priceCache {
	return &priceCache{store: s, ttl: ttl, m: make(map[string]cachedPrice)}
}

// get returns the price that applies to model today, or nil.
func (c *priceCache) get(ctx context.Context, model string) (*store.Price, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[model]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.price, nil
	}
	p, err := c.store.PriceFor(ctx, model, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedPrices {
		// Model names are the tenants' choice: the cache must not grow
		// with them. Drop what has expired, or everything.
		for k, e := range c.m {
			if now.Sub(e.at) >= c.ttl {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCachedPrices {
			clear(c.m)
		}
	}
	c.m[model] = cachedPrice{price: p, at: now}
	c.mu.Unlock()
	return p, nil
}
