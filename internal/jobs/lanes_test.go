package jobs

import (
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
