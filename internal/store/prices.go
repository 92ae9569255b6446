package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Price is a model's price in USD per one million tokens.
type Price struct {
	Model         string    `json:"model"`
	EffectiveFrom time.Time `json:"effective_from"`
	Input         float64   `json:"input_per_mtok"`
	CachedInput   *float64  `json:"cached_input_per_mtok,omitempty"`
	Output        float64   `json:"output_per_mtok"`
}

// PriceFor returns the price that applied to model on day, or nil.
func (s *Store) PriceFor(ctx context.Context, model string, day time.Time) (*Price, error) {
	var p Price
	err := s.pool.QueryRow(ctx, `SELECT model, effective_from, input_per_mtok::float8, cached_input_per_mtok::float8, output_per_mtok::float8
FROM model_prices WHERE (model = $1 OR starts_with($1, model || '-')) AND effective_from <= $2::date
ORDER BY length(model) DESC, effective_from DESC LIMIT 1`, model, day).Scan(&p.Model, &p.EffectiveFrom, &p.Input, &p.CachedInput, &p.Output)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: price of %s: %w", model, err)
	}
	return &p, nil
}
