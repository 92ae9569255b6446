package jobs

import "github.com/carryover/carryover/internal/store"

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
