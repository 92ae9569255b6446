# Targets of internal/merge. The benchmarks are a module of their own
# (cmd/mergebench/go.mod) so that goldmark stays out of the service's go.mod;
# -mod=mod lets that module follow changes of the main go.mod.
MERGEBENCH = cd cmd/mergebench && GOWORK=off GOFLAGS=-mod=mod go run .

.PHONY: bench-fidelity bench-clean bench-clean-habits bench-merge merge-compare fuzz-short

## bench-fidelity: reconstruct real documents (fetched now) from misbehaving continuations,
## tuning half and evaluation half (cmd/mergebench/split.go)
bench-fidelity:
	$(MERGEBENCH) fidelity

## bench-clean: merge Markdown files outside the fidelity corpus (GOROOT, module cache) that
## the model left alone, whole and cut once; lists every document the merge changed
bench-clean:
	$(MERGEBENCH) clean

## bench-clean-habits: the same documents continued with the tuning half's habits and
## phrasings, one case per document and habit: a third set of documents to tune on
bench-clean-habits:
	$(MERGEBENCH) clean -habits

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
# Budgets are counts of executions, not durations: a -fuzztime duration races
# Go 1.26's fuzz coordinator at its deadline (go.dev/issue/75804, fixed in
# 1.27) and fails a loaded CI run with a bare "context deadline exceeded" and
# no crasher. 80,000 executions take about 8 s here; minimizing a new input is
# capped by count for the same reason. Each run starts from the committed
# seeds in a fresh fuzz cache, so what `make test` finds depends on the tree,
# not on what earlier runs on this machine explored. Longer hunts
# (FUZZ_EXECS=2000000x FUZZ_CACHE= for go's shared cache) are development
# work: what they find is fixed and kept as a seed.
FUZZ_EXECS ?= 80000x
FUZZ_CACHE ?= $(shell mktemp -d)
fuzz-short:
	go test ./internal/merge -run '^$$' -fuzz '^FuzzMergeText$$' -fuzztime=$(FUZZ_EXECS) -fuzzminimizetime=200x $(if $(FUZZ_CACHE),-args -test.fuzzcachedir=$(FUZZ_CACHE))
	go test ./internal/merge -run '^$$' -fuzz '^FuzzMergeStructured$$' -fuzztime=$(FUZZ_EXECS) -fuzzminimizetime=200x $(if $(FUZZ_CACHE),-args -test.fuzzcachedir=$(FUZZ_CACHE))
