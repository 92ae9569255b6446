package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// keyPrefix marks carryover API keys so they are recognizable in a leak scan.
const keyPrefix = "co_"

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CreateAPIKey makes a key for a tenant (creating the tenant if needed) and
// returns it. Only its hash is stored: the key cannot be shown again.
func (s *Store) CreateAPIKey(ctx context.Context, tenant string) (key, prefix string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("store: random key: %w", err)
	}
	key = keyPrefix + hex.EncodeToString(b)
	prefix = key[:len(keyPrefix)+8]
	_, err = s.pool.Exec(ctx, `
WITH t AS (INSERT INTO tenants (id) VALUES ($1) ON CONFLICT DO NOTHING)
INSERT INTO api_keys (tenant_id, key_hash, prefix) VALUES ($1, $2, $3)`, tenant, hashKey(key), prefix)
	if err != nil {
		return "", "", fmt.Errorf("store: create API key for tenant %q: %w", tenant, err)
	}
	return key, prefix, nil
}

// ErrBadKey means the key is unknown or revoked.
var ErrBadKey = errors.New("unknown or revoked API key")

// Authenticate returns the tenant a live key belongs to.
func (s *Store) Authenticate(ctx context.Context, key string) (string, error) {
	var tenant string
	err := s.pool.QueryRow(ctx, `SELECT tenant_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, hashKey(key)).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrBadKey
	}
	if err != nil {
		return "", fmt.Errorf("store: authenticate: %w", err)
	}
	return tenant, nil
}

// RevokeAPIKey revokes the key with this prefix; it reports whether one was.
func (s *Store) RevokeAPIKey(ctx context.Context, prefix string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE prefix = $1 AND revoked_at IS NULL`, prefix)
	if err != nil {
		return false, fmt.Errorf("store: revoke API key: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}
