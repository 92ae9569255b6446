package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// acquireBound bounds every acquisition of a pooled connection, whichever
// method of the pool asks for it: pgxpool calls an acquire tracer's
// TraceAcquireStart with the caller's context and acquires under the
// context it returns, while the statement itself runs under the caller's.
// So a statement waits at most d for a connection, then fails with
// context.DeadlineExceeded, and a slow statement is not cut short.
type acquireBound struct{ d time.Duration }

type acquireCancelKey struct{}

func (b acquireBound) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	return context.WithValue(ctx, acquireCancelKey{}, cancel)
}

func (acquireBound) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	if cancel, ok := ctx.Value(acquireCancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

// The pool takes its tracer from the connection config, where it must be a
// query tracer: these do nothing.

func (acquireBound) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (acquireBound) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
