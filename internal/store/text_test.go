package store_test

import (
	"context"
	"testing"

	"github.com/carryover/carryover/internal/store"
)

// A chunk Postgres refuses as data (a NUL in its text) fails alone, as a
// data error the caller can tell from a lost connection; a chunk saved in
// the same round trip is stored, and token counts past 2^31-1 fit.
func TestSaveDataError(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	bad, good := newJob(t, s), newJob(t, s)
	cb, err := s.ClaimChunk(ctx, bad, 0)
	if err != nil || cb.Outcome != store.Claimed {
		t.Fatal(cb.Outcome, err)
	}
	cg, err := s.ClaimChunk(ctx, good, 0)
	if err != nil || cg.Outcome != store.Claimed {
		t.Fatal(cg.Outcome, err)
	}
	errs := make(chan error, 1)
	go func() {
		_, err := cb.Save(ctx, chunk("a\x00b", true))
		errs <- err
	}()
	n := chunk("big", true)
	n.Usage = store.Usage{Input: 1 << 33, Output: 1<<31 + 5}
	if _, err := cg.Save(ctx, n); err != nil {
		t.Fatalf("the good chunk: %v", err)
	}
	if err := <-errs; err == nil || !store.IsDataError(err) {
		t.Fatalf("a NUL in the text: want a data error, got %v", err)
	}
	var out int64
	if err := s.Pool().QueryRow(ctx, `SELECT output_tokens FROM chunks WHERE job_id = $1::uuid`, good).Scan(&out); err != nil || out != 1<<31+5 {
		t.Fatalf("output_tokens %d, %v", out, err)
	}
	if store.IsDataError(context.DeadlineExceeded) {
		t.Fatal("a timeout is not a data error")
	}
}

// Text makes any string storable: NUL and invalid UTF-8 become U+FFFD.
func TestText(t *testing.T) {
	for in, want := range map[string]string{"ok": "ok", "a\x00b": "a\uFFFDb", "a\xffb": "a\uFFFDb", "": ""} {
		if got := store.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}
