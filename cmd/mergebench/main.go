// Command mergebench measures internal/merge: "fidelity" cuts real
// documents fetched at run time into chunks, continues each chunk the way
// models misbehave and reports how many documents come back exactly; "speed"
// merges a large document and compares the throughput with a plain
// concatenation of the same chunks.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mergebench fidelity|speed [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fidelity":
		fs := flag.NewFlagSet("fidelity", flag.ExitOnError)
		cache := fs.String("cache", defaultCache(), "directory for fetched documents")
		trials := fs.Int("trials", 3, "random cuttings per document and behavior")
		seed := fs.Int64("seed", 1, "random seed")
		verbose := fs.Bool("v", false, "print each failing case")
		only := fs.String("only", "", `run only cases whose "document behavior" contains this, printing their joins`)
		fs.Parse(os.Args[2:])
		err = fidelity(*cache, *trials, *seed, *verbose || *only != "", *only)
	case "speed":
		fs := flag.NewFlagSet("speed", flag.ExitOnError)
		size := fs.Int("mb", 50, "document size in MB")
		chunks := fs.Int("chunks", 500, "number of chunks")
		fs.Parse(os.Args[2:])
		err = speed(*size<<20, *chunks)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mergebench:", err)
		os.Exit(1)
	}
}
