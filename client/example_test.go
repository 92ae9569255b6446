package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/config"
	"github.com/carryover/carryover/internal/simulator"
	"github.com/carryover/carryover/internal/testenv"
	"github.com/carryover/carryover/internal/worker"
)

// Example enqueues a job whose answer is longer than one model response
// allows, waits while the worker continues it chunk by chunk and merges the
// chunks, and reads the one document that results.
//
// The model here is the bundled simulator (the prompt's [[sim ...]]
// directive tells it what document to write) and the worker runs in this
// process; in production the worker is cmd/worker and the model a real
// OpenAI-compatible server. The producer's code is the same.
func Example() {
	ctx := context.Background()
	queue, stop := startExampleWorker()
	defer stop()

	c, err := client.New(ctx, client.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), ChunkQueue: queue})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	prompt := "[[sim format=csv size=3000 seed=7]] Generate a CSV of customers."
	job, err := c.Enqueue(ctx, client.Request{
		Model:           "gpt-4.1-mini",
		Input:           client.Input{Prompt: prompt},
		Format:          "csv",
		MaxOutputTokens: 300, // far less than the document needs
	})
	if err != nil {
		log.Fatal(err)
	}

	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := c.Wait(wctx, job.ID, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", st.Status, "after", st.Chunks, "chunks")
	fmt.Println("stop reason:", st.StopReason)

	res, err := c.Result(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	want, _, _ := simulator.DocumentFor(prompt)
	fmt.Println("merged exactly:", res.Content == want)
	fmt.Println("first line:", strings.SplitN(res.Content, "\n", 2)[0])
	// Output:
	// status: succeeded after 3 chunks
	// stop reason: completed
	// merged exactly: true
	// first line: id,name,city,amount,note,updated_at
}

// startExampleWorker serves the simulator and runs a worker on a queue of
// its own; stop ends both and removes the queue.
func startExampleWorker() (queue string, stop func()) {
	sim := httptest.NewServer(simulator.New(simulator.Config{}))
	queue = testenv.RandomName("example_")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{SkipMigrate: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Config: config.Config{DatabaseURL: dbURL, RedisURL: testenv.RedisURL(), OpenAIBaseURL: sim.URL + "/v1",
				OpenAIAPIKey: "sk-example", Concurrency: 4, ChunkQueue: queue, LogLevel: "warn",
				ReconcileInterval: time.Second, StaleAfter: time.Minute, MaxRetry: 3,
				PollInterval: 50 * time.Millisecond, DelayedInterval: 100 * time.Millisecond}})
	}()
	return queue, func() {
		cancel()
		if err := <-done; err != nil {
			log.Print("worker: ", err)
		}
		sim.Close()
		testenv.DeleteQueue(queue)
	}
}
