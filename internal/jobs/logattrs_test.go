package jobs

import (
	"bytes"
	"log/slog"
	"testing"
)

// Lines logged through deferredAttrs read as they do without it.
func TestDeferredAttrs(t *testing.T) {
	logs := []struct {
		name string
		log  func(*slog.Logger)
	}{
		{"attrs", func(l *slog.Logger) { l.With("job_id", "j", "seq", 3).Info("m", "k", 1) }},
		{"nested", func(l *slog.Logger) { l.With("job_id", "j").With("seq", 3).Warn("m") }},
		{"group", func(l *slog.Logger) { l.With("job_id", "j").WithGroup("g").With("seq", 3).Info("m", "k", 1) }},
		{"below the level", func(l *slog.Logger) { l.With("job_id", "j").Debug("m") }},
		{"none", func(l *slog.Logger) { l.Error("m") }},
	}
	for _, tc := range logs {
		t.Run(tc.name, func(t *testing.T) {
			var want, got bytes.Buffer
			opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}
			tc.log(slog.New(slog.NewJSONHandler(&want, opts)))
			tc.log(slog.New(deferAttrs(slog.NewJSONHandler(&got, opts))))
			if got.String() != want.String() {
				t.Fatalf("got %q, want %q", got.String(), want.String())
			}
		})
	}
}
