package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/store"
	"github.com/carryover/carryover/internal/testenv"
)

// Config.Tenant owns the jobs a client enqueues with no Request.Tenant of
// their own; Request.Tenant still wins, and an unknown or malformed tenant
// is a field error naming tenant, with nothing stored.
func TestClientTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acme, other := testenv.RandomName("acme-"), testenv.RandomName("other-")
	for _, tn := range []string{acme, other} {
		if _, _, err := st.CreateAPIKey(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: testenv.Queue(t), Tenant: acme})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		tenant, want, badField string
	}{
		{"", acme, ""},
		{other, other, ""},
		{"Bad Tenant!", "", "tenant"},
		{"nosuch", "", "tenant"},
	}
	for _, tt := range tests {
		j, err := c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "Write a CSV."}, Tenant: tt.tenant})
		var ve *client.ValidationError
		if tt.badField != "" {
			if !errors.As(err, &ve) || ve.Fields[0].Field != tt.badField || j.ID != "" {
				t.Errorf("tenant %q: %v, job %q; want a field error naming %s", tt.tenant, err, j.ID, tt.badField)
			}
			continue
		}
		if err != nil {
			t.Fatalf("tenant %q: %v", tt.tenant, err)
		}
		if owner, err := c.Owner(ctx, j.ID); err != nil || owner != tt.want {
			t.Errorf("Request.Tenant %q with Config.Tenant %s: job of %q (%v), want %q", tt.tenant, acme, owner, err, tt.want)
		}
	}
}

// A read-only client needs no Redis: it reads jobs, and refuses to queue
// work with ErrReadOnly.
func TestReadOnlyClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	j, err := e.c.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "Write a CSV."}})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: "redis://127.0.0.1:1/0", ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only client with Redis unreachable: %v", err)
	}
	defer ro.Close()
	if s, err := ro.Status(ctx, j.ID); err != nil || s.Status != "queued" {
		t.Fatalf("Status: %+v %v", s, err)
	}
	if _, err := ro.Result(ctx, j.ID); !errors.Is(err, client.ErrNotReady) {
		t.Fatalf("Result: %v", err)
	}
	if err := ro.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if _, err := ro.Enqueue(ctx, client.Request{Model: "gpt-4.1-mini", Input: client.Input{Prompt: "Write a CSV."}}); !errors.Is(err, client.ErrReadOnly) {
		t.Errorf("Enqueue: %v", err)
	}
	for name, call := range map[string]func() error{
		"Cancel":    func() error { _, err := ro.Cancel(ctx, j.ID); return err },
		"Resume":    func() error { _, err := ro.Resume(ctx, j.ID, client.ResumeOptions{}); return err },
		"Remerge":   func() error { _, err := ro.Remerge(ctx, j.ID); return err },
		"Consumers": func() error { _, _, err := ro.Consumers(ctx, j.ID); return err },
	} {
		if err := call(); !errors.Is(err, client.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
}
