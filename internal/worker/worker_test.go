package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// loop is a maintenance service that takes a while to notice its end.
type loop struct{ stopped atomic.Bool }

func (l *loop) Run(ctx context.Context) {
	<-ctx.Done()
	time.Sleep(20 * time.Millisecond)
	l.stopped.Store(true)
}

// The stop startMaintenance returns waits for every service to return, so
// Run never returns with a maintenance loop still running; the services do
// not stop when Run's own context ends, only when stop is called.
func TestStartMaintenanceStopWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, b := &loop{}, &loop{}
	stop := startMaintenance(ctx, a, b)
	cancel()
	time.Sleep(40 * time.Millisecond)
	if a.stopped.Load() || b.stopped.Load() {
		t.Fatal("a service stopped with Run's context, before stop")
	}
	stop()
	if !a.stopped.Load() || !b.stopped.Load() {
		t.Fatal("stop returned before every service did")
	}
}
