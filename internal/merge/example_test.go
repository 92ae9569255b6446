package merge_test

import (
	"fmt"

	"github.com/carryover/carryover/internal/merge"
)

// A CSV answer in three chunks, as a chatty model writes it: a fence around
// the whole answer, a continuation that talks before it goes on, one that
// repeats the cut row, and a closing remark. The merge gives back the bare
// document and says what it dropped and why.
func Example() {
	chunks := []merge.Chunk{
		{Seq: 0, Text: "```csv\nid,city\n1,Oslo\n2,Ro", FinishReason: "length"},
		{Seq: 1, Text: "Carrying on from the last row.\n\nme\n3,Lima\n", FinishReason: "length"},
		{Seq: 2, Text: "3,Lima\n4,Pune\n```\n\nLet me know if you need more rows!", FinishReason: "stop"},
	}
	res, err := merge.Merge(merge.Options{Format: "csv"}, chunks)
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Content)
	fmt.Println("success:", res.Success, "records:", res.RecordCount)
	for _, j := range res.Joins {
		fmt.Printf("join %d: %s\n", j.Seq, j.Method)
	}
	for _, r := range res.Envelope {
		fmt.Printf("chunk %d dropped %q (%s)\n", r.Chunk, r.Removed, r.Why)
	}
	// Output:
	// id,city
	// 1,Oslo
	// 2,Rome
	// 3,Lima
	// 4,Pune
	// success: true records: 4
	// join 1: none
	// join 2: structural
	// chunk 0 dropped "```csv\n" (unwrapped_fence)
	// chunk 1 dropped "Carrying on from the last row.\n\n" (preamble)
	// chunk 2 dropped "\nLet me know if you need more rows!" (trailer)
	// chunk 2 dropped "```\n" (unwrapped_fence)
}
