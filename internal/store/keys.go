package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/carryover/carryover/carryovertype"
)

// keyPrefix marks carryover API keys so they are recognizable in a leak scan.
const keyPrefix = "co_"

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ErrBadTenant refuses a tenant ID the tenants table would refuse; the
// error says the rule (carryovertype.TenantRule), not the constraint.
var ErrBadTenant = errors.New("malformed tenant")

// CreateAPIKey makes a key for a tenant (creating the tenant if needed) and
// returns it. Only its hash is stored: the key cannot be shown again. A
// tenant that exists takes no number from the ordinal sequence, so tenants
// made one after another get consecutive ordinals (and different lanes).
// A malformed tenant gets an error wrapping ErrBadTenant, and nothing is
// stored.
func (s *Store) CreateAPIKey(ctx context.Context, tenant string) (key, prefix string, err error) {
	if !carryovertype.ValidTenant(tenant) {
		return "", "", fmt.Errorf("%w %q: a tenant must be %s", ErrBadTenant, tenant, carryovertype.TenantRule)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("store: random key: %w", err)
	}
	key = keyPrefix + hex.EncodeToString(b)
	prefix = key[:len(keyPrefix)+8]
	_, err = s.pool.Exec(ctx, `
WITH t AS (INSERT INTO tenants (id) SELECT $1 WHERE NOT EXISTS (SELECT FROM tenants WHERE id = $1) ON CONFLICT DO NOTHING)
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

// RevokeAPIKey revokes the live key that keyOrPrefix names: a whole key, or
// the prefix shown when it was made, within tenant when tenant is not "".
// Prefixes are short and need not be unique, so a prefix that more than one
// live key shares revokes nothing: it returns how many live keys matched
// and revokes only when exactly one did.
func (s *Store) RevokeAPIKey(ctx context.Context, keyOrPrefix, tenant string) (matched int, err error) {
	col, val := "prefix", keyOrPrefix
	if len(keyOrPrefix) > len(keyPrefix)+8 {
		col, val = "key_hash", hashKey(keyOrPrefix)
	}
	err = s.pool.QueryRow(ctx, `
WITH m AS (SELECT id FROM api_keys WHERE `+col+` = $1 AND revoked_at IS NULL AND ($2 = '' OR tenant_id = $2) FOR UPDATE),
     r AS (UPDATE api_keys SET revoked_at = now() WHERE id IN (SELECT id FROM m) AND (SELECT count(*) FROM m) = 1)
SELECT count(*) FROM m`, val, tenant).Scan(&matched)
	if err != nil {
		return 0, fmt.Errorf("store: revoke API key: %w", err)
	}
	return matched, nil
}

// TenantOrdinal returns the ordinal of the tenant a job belongs to: tenants
// are numbered in the order they were made ('default' is 0), and the
// ordinal picks the tenant's chunk queue lane.
func (s *Store) TenantOrdinal(ctx context.Context, jobID string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT t.ordinal FROM jobs j JOIN tenants t ON t.id = j.tenant_id WHERE j.id = $1::uuid`, jobID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("store: tenant ordinal of job %s: %w", jobID, err)
	}
	return n, nil
}
