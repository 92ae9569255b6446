package jobs

import (
	"context"
	"slices"
	"testing"
)

// Lane 0 is the chunk queue itself (the default tenant's, ordinal 0, and
// where every chunk task went before lanes); the first Lanes tenants get
// different lanes; a single lane is the old single queue.
func TestChunkLanes(t *testing.T) {
	t.Parallel()
	q := Queues{Chunk: "c", Merge: "m", Lanes: 3}
	for _, c := range []struct {
		ordinal int64
		want    string
	}{{0, "c"}, {1, "c.lane1"}, {2, "c.lane2"}, {3, "c"}, {4, "c.lane1"}, {-1, "c.lane2"}} {
		if got := q.ChunkLane(c.ordinal); got != c.want {
			t.Errorf("ChunkLane(%d) = %q, want %q", c.ordinal, got, c.want)
		}
	}
	if got := q.ChunkLanes(); !slices.Equal(got, []string{"c", "c.lane1", "c.lane2"}) {
		t.Errorf("ChunkLanes = %q", got)
	}
	if got := (Queues{Chunk: "c", Lanes: 1}).ChunkLanes(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("one lane: %q", got)
	}
	if got := len((Queues{Chunk: "c"}).ChunkLanes()); got != DefaultLanes {
		t.Errorf("Lanes 0 gives %d lanes, want DefaultLanes (%d)", got, DefaultLanes)
	}
}

// ordinalCount answers every job with one ordinal and counts the lookups.
type ordinalCount struct {
	ordinal int64
	calls   int
}

func (o *ordinalCount) TenantOrdinal(context.Context, string) (int64, error) {
	o.calls++
	return o.ordinal, nil
}

// Inside a chunk task, the job's next chunk goes to the lane the task came
// from without a lookup; another job, or a queue that is no lane (the merge
// queue), is looked up (once: the cache keeps it).
func TestChunkQueueInLane(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		taskJob   string
		taskQueue string
		want      string
		lookups   int
	}{
		{"same job, its lane", "j1", "c.lane1", "c.lane1", 0},
		{"same job, lane 0", "j1", "c", "c", 0},
		{"another job's task", "j2", "c.lane1", "c.lane2", 1},
		{"a queue that is no lane", "j1", "m", "c.lane2", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ord := &ordinalCount{ordinal: 2}
			d := NewDispatcher(nil, Queues{Chunk: "c", Merge: "m", Lanes: 3}, DefaultTaskOptions(), ord)
			tctx := d.InLane(ctx, c.taskJob, c.taskQueue)
			for range 2 {
				got, err := d.ChunkQueue(tctx, "j1")
				if err != nil || got != c.want {
					t.Fatalf("ChunkQueue = %q, %v; want %q", got, err, c.want)
				}
			}
			if ord.calls != c.lookups {
				t.Errorf("%d lookups, want %d", ord.calls, c.lookups)
			}
		})
	}
}
