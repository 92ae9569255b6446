# Targets of internal/merge. The benchmarks are a module of their own
# (cmd/mergebench/go.mod) so that goldmark stays out of the service's go.mod;
# -mod=mod lets that module follow changes of the main go.mod.
MERGEBENCH = cd cmd/mergebench && GOWORK=off GOFLAGS=-mod=mod go run .

.PHONY: bench-fidelity bench-merge merge-compare fuzz-short

## bench-fidelity: reconstruct real documents (fetched now) from misbehaving continuations,
## tuning half and evaluation half (cmd/mergebench/split.go)
bench-fidelity:
	$(MERGEBENCH) fidelity

# BASE is the commit whose merge merge-compare holds today's against.
BASE ?= ed831b8
BASEMERGE = cmd/mergebench/basemerge

## merge-compare: the merge at BASE against the working tree's, case by case, over the
## old benchmark, the habit benchmark, the fuzz seeds and the e2e conversations;
## fails when a case BASE got right comes out different
merge-compare:
	rm -rf $(BASEMERGE) && mkdir -p $(BASEMERGE)
	git archive $(BASE) -- ':(glob)internal/merge/*.go' ':(exclude,glob)internal/merge/*_test.go' | tar -x --strip-components=2 -C $(BASEMERGE)
	cd cmd/mergebench && GOWORK=off GOFLAGS=-mod=mod go vet -tags compare . && GOWORK=off GOFLAGS=-mod=mod go run -tags compare . compare

## bench-merge: merge throughput per format against plain concatenation (50 MB, 500 chunks)
bench-merge:
	$(MERGEBENCH) speed

## fuzz-short: short runs of the merge fuzzers
fuzz-short:
	go test ./internal/merge -run '^$$' -fuzz '^FuzzMergeText$$' -fuzztime=10s
	go test ./internal/merge -run '^$$' -fuzz '^FuzzMergeStructured$$' -fuzztime=10s
