// Command mergebench measures internal/merge: "fidelity" cuts real
// documents fetched at run time into chunks, continues each chunk the way
// models misbehave and reports how many documents come back exactly, on a
// tuning and an evaluation half; "speed" merges a large document and
// compares the throughput with a plain concatenation of the same chunks;
// "clean" merges Markdown documents outside the corpus that the model
// left alone and lists every one the merge changed (silent loss), and
// with -habits continues them with the tuning half's habits;
// "compare" (built with -tags compare, see make merge-compare) runs the
// merge of an earlier commit and today's over the same cases and lists what
// changed.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mergebench fidelity|speed|clean|compare [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fidelity":
		fs := flag.NewFlagSet("fidelity", flag.ExitOnError)
		cache := fs.String("cache", defaultCache(), "directory for fetched documents")
		trials := fs.Int("trials", 3, "random cuttings per document and behavior (at least; see minCell)")
		seed := fs.Int64("seed", 1, "random seed of the cuttings and wordings (not of the split, which is fixed)")
		verbose := fs.Bool("v", false, "print each failing case of the tuning half")
		// Tuning must not use -show-eval: see fidelityOpts.showEval.
		showEval := fs.Bool("show-eval", false, "print each failing case of the evaluation half (never while tuning)")
		tuningOnly := fs.Bool("tuning-only", false, "merge the tuning half alone (faster, for comparing builds while tuning)")
		only := fs.String("only", "", `run only cases whose "document behavior" contains this, printing their joins (tuning half; with -show-eval both)`)
		fs.Parse(os.Args[2:])
		err = fidelity(fidelityOpts{cache: *cache, trials: *trials, seed: *seed, verbose: *verbose, showEval: *showEval, only: *only, tuningOnly: *tuningOnly})
	case "speed":
		fs := flag.NewFlagSet("speed", flag.ExitOnError)
		size := fs.Int("mb", 50, "document size in MB")
		chunks := fs.Int("chunks", 500, "number of chunks")
		fs.Parse(os.Args[2:])
		err = speed(*size<<20, *chunks)
	case "clean":
		fs := flag.NewFlagSet("clean", flag.ExitOnError)
		habits := fs.Bool("habits", false, "continue the documents with the tuning half's habits instead (a third set of documents to tune on)")
		only := fs.String("only", "", "with -habits: run only these habits (comma-separated)")
		verbose := fs.Bool("v", false, "with -habits: print each failing case")
		every := fs.Int("every", 1, "with -habits: take every n-th document")
		fs.Parse(os.Args[2:])
		if *habits {
			err = cleanHabits(*only, *every, *verbose)
		} else {
			err = clean()
		}
	case "compare":
		fs := flag.NewFlagSet("compare", flag.ExitOnError)
		cache := fs.String("cache", defaultCache(), "directory for fetched documents")
		repo := fs.String("repo", "../..", "the repository's root, for the fuzz seeds")
		fs.Parse(os.Args[2:])
		var regressions int
		regressions, err = compare(*cache, *repo)
		if err == nil && regressions > 0 {
			os.Exit(1)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mergebench:", err)
		os.Exit(1)
	}
}
