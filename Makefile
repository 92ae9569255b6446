# carryover — make targets. `make demo` and `make test` are the quick start.
SHELL := /bin/bash
GO ?= go
export DATABASE_URL ?= postgres://root@127.0.0.1:5432/carryover?sslmode=disable
export REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: all build services demo test test-security test-short vet fmt staticcheck bench bench-pipeline bench-inflight clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

services:
	@bash scripts/services.sh

## demo: the main job end to end on the simulator (or OpenAI when OPENAI_API_KEY is set)
demo:
	@bash scripts/demo.sh

## test: vet, every test on real Postgres and Redis (isolated per run), short fuzz runs; -parallel
## caps parallel tests per package, for Postgres's connections (about 12 per end-to-end test)
test: services vet
	$(GO) test -count=1 -parallel 4 -timeout 8m ./...
	@$(MAKE) --no-print-directory fuzz-short

## test-security: the attack tests alone (each is also part of `make test`); README's Security section
test-security: services
	$(GO) test -count=1 -parallel 4 -run Security -v ./... 2>&1 | grep -E '^(--- |ok|FAIL|panic)'; exit $${PIPESTATUS[0]}

test-short: services
	$(GO) test -short -count=1 -parallel 4 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd cmd/mergebench && GOWORK=off GOFLAGS=-mod=mod $(GO) vet ./...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

## bench: pipeline chunks/s against raw and durable asynq hops, chunks in flight on one worker, and merge MB/s
bench: services bench-pipeline bench-inflight
	@$(MAKE) --no-print-directory bench-merge

bench-pipeline:
	$(GO) test -count=1 -run '^$$' -bench 'Pipeline|Strategies' -benchtime 1x -timeout 20m ./bench/

## bench-inflight: 10,000 jobs of 3 chunks at 20 s per call on one worker process, background mode on and off
bench-inflight: services
	$(GO) test -count=1 -run '^$$' -bench Inflight -benchtime 1x -timeout 40m ./bench/

## bench-tracing: what the spans add to one chunk task, tracing off (no OTEL_* set) and on
bench-tracing:
	$(GO) test -count=1 -run '^$$' -bench TaskSpans -benchtime 50000x ./internal/jobs/

clean:
	rm -rf bin

# Fragments owned by their packages (merge: bench-merge, bench-fidelity, fuzz-short).
-include mk/*.mk
