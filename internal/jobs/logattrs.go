package jobs

import (
	"context"
	"log/slog"
	"slices"
)

// deferredAttrs is a slog.Handler that keeps the attributes of
// Logger.With to itself until a line is logged. slog's text and JSON
// handlers format With's attributes at once, which the chunk handler paid
// for on every chunk (job_id, seq, response_id) although most chunks log no
// line at the usual levels.
type deferredAttrs struct {
	next  slog.Handler
	attrs []slog.Attr
}

// deferAttrs wraps h (once: a deferredAttrs is returned as it is).
func deferAttrs(h slog.Handler) slog.Handler {
	if _, ok := h.(*deferredAttrs); ok {
		return h
	}
	return &deferredAttrs{next: h}
}

func (h *deferredAttrs) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *deferredAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return &deferredAttrs{next: h.next, attrs: append(slices.Clip(h.attrs), attrs...)}
}

// WithGroup applies the attributes kept so far, which belong outside the group.
func (h *deferredAttrs) WithGroup(name string) slog.Handler {
	return &deferredAttrs{next: h.materialize().WithGroup(name)}
}

func (h *deferredAttrs) Handle(ctx context.Context, r slog.Record) error {
	return h.materialize().Handle(ctx, r)
}

func (h *deferredAttrs) materialize() slog.Handler {
	if len(h.attrs) == 0 {
		return h.next
	}
	return h.next.WithAttrs(h.attrs)
}
