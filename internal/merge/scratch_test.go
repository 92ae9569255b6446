package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

func TestScratchWS(t *testing.T) {
	name := os.Getenv("SCRATCH")
	if name == "" {
		t.Skip()
	}
	raw, _ := os.ReadFile(name + ".json")
	var chunks []Chunk
	json.Unmarshal(raw, &chunks)
	want, _ := os.ReadFile(name + ".want")
	format, _ := os.ReadFile(name + ".format")
	res, _ := Merge(Options{Format: string(format)}, chunks)
	fmt.Println("exact:", res.Content == string(want))
	doc := ""
	for k, j := range res.Joins {
		_ = k
		fmt.Printf("join %+v\n", j)
	}
	// the whitespace overlap at join 1 as the truth would have it
	d := chunks[0].Text
	var b buffers
	n, c := b.whitespaceOverlap(d, chunks[1].Text, 0, false)
	fmt.Println("ws", n, c, doc)
}
