# Targets of internal/merge. The benchmarks are a module of their own
# (cmd/mergebench/go.mod) so that goldmark stays out of the service's go.mod;
# -mod=mod lets that module follow changes of the main go.mod.
MERGEBENCH = cd cmd/mergebench && GOWORK=off GOFLAGS=-mod=mod go run .

.PHONY: bench-fidelity bench-merge fuzz-short

## bench-fidelity: reconstruct real documents (fetched now) from misbehaving continuations
bench-fidelity:
	$(MERGEBENCH) fidelity

## bench-merge: merge throughput per format against plain concatenation (50 MB, 500 chunks)
bench-merge:
	$(MERGEBENCH) speed

## fuzz-short: short runs of the merge fuzzers
fuzz-short:
	go test ./internal/merge -run '^$$' -fuzz '^FuzzMergeText$$' -fuzztime=10s
	go test ./internal/merge -run '^$$' -fuzz '^FuzzMergeStructured$$' -fuzztime=10s
