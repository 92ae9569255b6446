// The merge benchmarks live in a module of their own so that goldmark, used
// only to compare Markdown renderings, never enters the service's go.mod.
module github.com/carryover/carryover/cmd/mergebench

go 1.26.0

require (
	github.com/carryover/carryover v0.0.0
	github.com/yuin/goldmark v1.7.8
)

replace github.com/carryover/carryover => ../..
