// The merge benchmarks live in a module of their own so that goldmark, used
// only to compare Markdown renderings, never enters the service's go.mod.
module github.com/carryover/carryover/cmd/mergebench

go 1.26.0

require (
	github.com/carryover/carryover v0.0.0
	github.com/yuin/goldmark v1.7.8
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/openai/openai-go/v3 v3.96.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)

replace github.com/carryover/carryover => ../..
