package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/carryover/carryover/internal/testenv"
)

// A key prefix is eight hex digits: two keys, of any tenants, may share it.
// Revoking by a shared prefix must revoke nothing (it used to revoke every
// key with it, in every tenant); --tenant or the whole key picks one.
func TestSecurityRevokeSharedPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	ta, tb := testenv.RandomName("ta"), testenv.RandomName("tb")
	keyA, prefixA, err := s.CreateAPIKey(ctx, ta)
	if err != nil {
		t.Fatal(err)
	}
	keyB, prefixB, err := s.CreateAPIKey(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	keyB2, _, err := s.CreateAPIKey(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	// Make the collision a random prefix would make one day in 2³².
	shared := prefixA
	if _, err := s.Pool().Exec(ctx, `UPDATE api_keys SET prefix = $1 WHERE prefix = $2`, shared, prefixB); err != nil {
		t.Fatal(err)
	}
	live := func(key string) bool {
		_, err := s.Authenticate(ctx, key)
		return err == nil
	}
	if n, err := s.RevokeAPIKey(ctx, shared, ""); err != nil || n != 2 {
		t.Fatalf("shared prefix: matched %d, %v; want 2", n, err)
	}
	if !live(keyA) || !live(keyB) || !live(keyB2) {
		t.Fatalf("a shared prefix revoked a key: a=%v b=%v b2=%v", live(keyA), live(keyB), live(keyB2))
	}
	if n, err := s.RevokeAPIKey(ctx, shared, tb); err != nil || n != 1 {
		t.Fatalf("prefix in tenant %s: matched %d, %v", tb, n, err)
	}
	if !live(keyA) || live(keyB) || !live(keyB2) {
		t.Fatalf("--tenant revoked the wrong keys: a=%v b=%v b2=%v", live(keyA), live(keyB), live(keyB2))
	}
	if n, err := s.RevokeAPIKey(ctx, keyA, ""); err != nil || n != 1 || live(keyA) || !live(keyB2) {
		t.Fatalf("whole key: matched %d, %v; a=%v b2=%v", n, err, live(keyA), live(keyB2))
	}
	if n, err := s.RevokeAPIKey(ctx, keyA, ""); err != nil || n != 0 {
		t.Fatalf("revoked key again: matched %d, %v", n, err)
	}
}

// Tenants are numbered in the order they are made, without gaps from keys
// made for a tenant that exists: the first N tenants get N different lanes.
func TestTenantOrdinalsConsecutive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	tx, ty := testenv.RandomName("tx"), testenv.RandomName("ty")
	for _, tn := range []string{tx, tx, tx, ty} {
		if _, _, err := s.CreateAPIKey(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	var ox, oy int64
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT ordinal FROM tenants WHERE id = $1), (SELECT ordinal FROM tenants WHERE id = $2)`, tx, ty).Scan(&ox, &oy); err != nil {
		t.Fatal(err)
	}
	if oy != ox+1 {
		// Parallel tests make tenants too: only a gap that keys of tx made
		// would be a fault, and those take no number any more. A parallel
		// test's tenant takes its number before its insert commits, so
		// the tenants between may show a moment later.
		var between int
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM tenants WHERE ordinal > $1 AND ordinal < $2`, ox, oy).Scan(&between); err != nil {
				t.Fatal(err)
			}
			if int64(between) == oy-ox-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ordinals %d and %d with %d tenants between: keys of an existing tenant took numbers", ox, oy, between)
			}
		}
	}
	var def int64
	if err := s.Pool().QueryRow(ctx, `SELECT ordinal FROM tenants WHERE id = 'default'`).Scan(&def); err != nil || def != 0 {
		t.Fatalf("the default tenant's ordinal is %d (%v), want 0 (lane 0, the chunk queue itself)", def, err)
	}
}
