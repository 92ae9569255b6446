package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/carryover/carryover/internal/cmdline"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/merge"
	"github.com/carryover/carryover/internal/store"
)

// runMerge merges chunk files offline with exactly the code the merge task
// runs (jobs.MergeChunks), to reproduce and debug a merge.
func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "auto", "document format: csv, json, jsonl, markdown, code, diff, text or auto")
	metaFile := fs.String("meta", "", "write the result metadata JSON to this file")
	hint := fs.String("hint", "", "the request text, for auto detection")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: worker merge --format F [--meta FILE] CHUNK_FILE...")
		fs.PrintDefaults()
	}
	if err := cmdline.Parse(fs, args); err != nil {
		return err
	}
	if !merge.ValidFormat(*format) {
		return cmdline.Usagef("--format: unknown format %q", *format)
	}
	files := fs.Args()
	if len(files) == 0 {
		return cmdline.Usagef("merge: no chunk files given")
	}
	chunks := make([]store.Chunk, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read chunk %d: %w", i, err)
		}
		finish := continuation.FinishLength
		if i == len(files)-1 {
			finish = continuation.FinishStop
		}
		chunks[i] = store.Chunk{Seq: i, Content: string(b), Size: len(b), FinishReason: string(finish), Decision: json.RawMessage("{}")}
	}
	stop := string(continuation.StopCompleted)
	job := store.Job{ID: "offline", Format: *format, Model: "offline", StopReason: &stop, CreatedAt: time.Now(),
		Continuation: json.RawMessage(`{}`)}
	res, meta, err := jobs.MergeChunks(job, chunks, *hint)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, res.Content); err != nil {
		return err
	}
	if *metaFile != "" {
		b, err := json.MarshalIndent(meta, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*metaFile, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--meta: %w", err)
		}
	}
	if !res.Success {
		fmt.Fprintln(stderr, "worker merge: merge not verified:", res.Error)
	}
	return nil
}
