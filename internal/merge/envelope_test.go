package merge

import (
	"fmt"
	"strings"
	"testing"
)

// TestWholeAnswerFence: a fence around the whole answer is removed for the
// typed formats (Markdown only when it names Markdown; prose never), single
// chunk included, and the removal is on record as unwrapped_fence.
func TestWholeAnswerFence(t *testing.T) {
	csv := "id,name\n1,Ann\n2,Bob\n"
	cases := []struct {
		name, format string
		chunks       []string
		want         string
		unwrapped    int // unwrapped_fence removals expected
	}{
		{"json single chunk", "json", []string{"```json\n{\"a\": 1}\n```\n"}, "{\"a\": 1}\n", 2},
		{"json single chunk, no final newline", "json", []string{"```json\n{\"a\": 1}\n```"}, "{\"a\": 1}\n", 2},
		{"csv single chunk, bare fence", "csv", []string{"```\n" + csv + "```\n"}, csv, 2},
		{"csv tilde fence", "csv", []string{"~~~csv\n" + csv + "~~~\n"}, csv, 2},
		{"jsonl", "jsonl", []string{"```jsonl\n{\"a\":1}\n{\"b\":2}\n```\n"}, "{\"a\":1}\n{\"b\":2}\n", 2},
		{"code names its language", "code", []string{"```python\nprint(1)\n```\n"}, "print(1)\n", 2},
		{"diff", "diff", []string{"```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n"}, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", 2},
		{"markdown named", "markdown", []string{"```markdown\n# T\n\ntext\n```\n"}, "# T\n\ntext\n", 2},
		{"markdown's own code block stays", "markdown", []string{"```go\nx := 1\n```\n"}, "```go\nx := 1\n```\n", 0},
		{"prose keeps its fence", "text", []string{"```\nplain\n```\n"}, "```\nplain\n```\n", 0},
		{"multi chunk json", "json", []string{"```json\n{\"items\": [1, 2,", " 3]}\n```\n"}, "{\"items\": [1, 2, 3]}\n", 2},
		// A last chunk with nothing in it: the answer ended before it.
		{"an empty last chunk", "json", []string{"```json\n{\"items\": [1, 2,", " 3]}\n```\n", ""}, "{\"items\": [1, 2, 3]}\n", 2},
		{"preamble before the fence", "csv", []string{"Here is the CSV you asked for:\n\n```csv\n" + csv + "```\n"}, csv, 2},
		{"a code block that closes before the end is the document's", "code", []string{"```go\nf", "unc a() {", "}\n```\n| a | ", "b |\n"}, "```go\nfunc a() {}\n```\n| a | b |\n", 0},
		// A fence line closes the wrapper only if it can by CommonMark:
		// the same character, as long at least.
		{"a tilde fence at a chunk's end is no close of a backtick wrapper", "markdown", []string{"```markdown\n# Fences\n\nSome text.\n\n", "~~~~\n", "aaa\n~~~~\n\nMore text.\n```\n"}, "# Fences\n\nSome text.\n\n~~~~\naaa\n~~~~\n\nMore text.\n", 2},
		{"markdown with a tilde line inside its own code block", "markdown", []string{"````markdown\n# Fences\n\n```\naaa\n~~~\n```\n\nMore te", "xt here.\n````\n"}, "# Fences\n\n```\naaa\n~~~\n```\n\nMore text here.\n", 2},
		// The first chunk ends inside the document's first line: the
		// next chunk's head shows the header the preamble is not.
		{"a preamble before a header cut in the first chunk", "csv", []string{"Of course. Here is the full table:\nexa", "mple,section,markdown,html\n361,Emphasis,5_6_78,<p>5_6_78</p>\n"},
			"example,section,markdown,html\n361,Emphasis,5_6_78,<p>5_6_78</p>\n", 0},
		{"short preamble before a bare fence", "json", []string{"Here you go.\n```\n{\"a\": 1}\n```\n"}, "{\"a\": 1}\n", 2},
		{"preamble with an aside before the fence", "json", []string{"Here's what you need! (It is a long one.)\n\n```json\n{\"a\": 1}\n```\n"}, "{\"a\": 1}\n", 2},
		{"a short preamble before a fence that names markdown", "markdown", []string{"Here's what you need.\n```markdown\n# T\n\ntext\n```\n"}, "# T\n\ntext\n", 2},
		{"markdown that opens with a sentence and its own block keeps both", "markdown", []string{"Here's what you need.\n```markdown\n# T\n```\n\nMore text after the block.\n"}, "Here's what you need.\n```markdown\n# T\n```\n\nMore text after the block.\n", 0},
		{"a short trailer after the close and a blank line", "csv", []string{"```CSV\nid,name\n1,Ann\n```\n\n**Done.**\n"}, "id,name\n1,Ann\n", 2},
		{"a trailer of few words after the close and a blank line", "json", []string{"```json\n[1, 2]\n```\n\nDone.\n"}, "[1, 2]\n", 2},
		{"trailer after the close", "json", []string{"```json\n[1, 2]\n```\n\nLet me know if you need anything else.\n"}, "[1, 2]\n", 2},
		// A remark right after the close, then a weaker one: the first
		// stands between the fence and the second.
		{"two remarks after the close", "markdown", []string{"~~~markdown\nSee [the README](h", "ttps://example.com/README.md).\n~~~\nI stopped exactly at the end of the article.\n\nThe article should now parse without errors.\n"},
			"See [the README](https://example.com/README.md).\n", 2},
		// A fence that closes the answer's own wrapper, then remarks a
		// blank line apart, each reading as one by itself.
		{"remarks a blank line after the wrapper's close", "markdown", []string{"~~~markdown\n# T\n\ntext\n~~~\n\nThe full document is above!\n\nThe document should now parse without errors.\n"},
			"# T\n\ntext\n", 2},
		// In Markdown a block of the document's may close before its last
		// paragraphs: a fence, a blank line, a remark and another is the
		// document's.
		{"markdown's own block, then prose", "markdown", []string{"```markdown\n# T\n\n~~~\ncode\n~~~\n\nI stopped exactly at the end of the article.\n\nThe article should now parse without errors.\n"},
			"# T\n\n~~~\ncode\n~~~\n\nI stopped exactly at the end of the article.\n\nThe article should now parse without errors.\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Merge(Options{Format: tc.format}, chunksOf(tc.chunks...))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != tc.want || !res.Success {
				t.Fatalf("content %q (success %v, %s), want %q", res.Content, res.Success, res.Error, tc.want)
			}
			n := 0
			for _, r := range res.Envelope {
				if r.Why == WhyUnwrappedFence {
					n++
				}
			}
			if n != tc.unwrapped {
				t.Errorf("%d unwrapped_fence removals, want %d: %+v", n, tc.unwrapped, res.Envelope)
			}
		})
	}
}

// widgetsDoc is a short README.
const widgetsDoc = "# Widgets\n\nWidgets is a small library for drawing widgets on a terminal.\nIt has no dependencies and works on every platform Go supports.\n\n" +
	"## Install\n\nRun the usual command to install it into your module,\nthen import the package where you need it.\n"

// roadmapDoc closes in its project's voice (as go-openapi/testify's
// ROADMAP.md does).
const roadmapDoc = "# Roadmap\n\nThe fork tracks upstream closely.\n\n## Goals\n\nKeep the API stable across releases.\n\n" +
	"## Status\n\nMost of the planned work has landed on main.\n\n" +
	"For a complete catalog of all upstream PRs and issues we've processed, see the [Upstream Tracking](../../usage/TRACKING.md).\n"

// cpuidDoc is a README of code that closes with its licence (as
// klauspost/cpuid's does).
var cpuidDoc = "# cpuid\n\n```go\n" + strings.Repeat("if cpuid.CPU.Supports(cpuid.SSE, cpuid.SSE2) {\n\tfmt.Println(\"We have Streaming SIMD 2 Extensions\")\n}\n", 8) + "```\n\n" +
	"```\n" + strings.Repeat("Name: Intel(R) Core(TM) i7-5600U CPU @ 2.60GHz\nPhysicalCores: 2\nThreadsPerCore: 2\n", 4) + "```\n\n" +
	"This code is published under an MIT license. See LICENSE file for more information.\n"

// goMethods is Go code that writes a space before parentheses often
// ("func (f *File)") and a line break between two of them never.
var goMethods = strings.Repeat("func (f *File) Name() string {\n\tif f.open {\n\t\treturn f.name\n\t}\n\treturn \"\"\n}\n\n"+
	"func (f *File) Size() (int64, error) {\n\treturn f.size, nil\n}\n\n", 4)

// vectorsDoc ends without a line break (as Go's
// crypto/x509/testdata/nist-pkits/README.md does).
const vectorsDoc = "# Test vectors\n\nVectors are extracted from the provided PDF of the test suite.\n\n" +
	"Vectors and test material are public domain (United States Government Work under 17 U.S.C. 105)."

// spanDoc is cut inside a code span at "`Q" (from getkin/kin-openapi's
// README, MIT).
const spanDoc = "[![Go Reference](https://pkg.go.dev/badge/github.com/getkin/kin-openapi.svg)](https://pkg.go.dev/github.com/getkin/kin-openapi)\n" +
	"[![Join Gitter Chat Channel -](https://badges.gitter.im/getkin/kin.svg)](https://gitter.im/getkin/kin?utm_source=badge&utm_medium=badge&utm_campaign=pr-badge&utm_content=badge)\n" +
	"[![inspect.software](https://raw.githubusercontent.com/inspect-software/badges/main/v1/g/getkin/kin-openapi.svg)](https://inspect.software/software/getkin/kin-openapi)\n" +
	"\n" +
	"# Introduction\n" +
	"A [Go](https://go.dev) project for handling [OpenAPI](https://www.openapis.org/) files. We target:\n" +
	"* [OpenAPI `v2.0`](https://github.com/OAI/OpenAPI-Specification/blob/main/versions/2.0.md) (formerly known as Swagger)\n" +
	"* [OpenAPI `v3.0`](https://github.com/OAI/OpenAPI-Specification/blob/main/versions/3.0.3.md)\n" +
	"* [OpenAPI `v3.1`](https://github.com/OAI/OpenAPI-Specification/blob/main/versions/3.1.0.md)\n" +
	"* [OpenAPI `v3.2`](https://spec.openapis.org/oas/v3.2.0.html) Partially: Media Type Object `itemSchema`, Path Item Object `query` (the HTTP `QUERY` method) and `additionalOperations` (custom HTTP methods).\n" +
	"\n" +
	"Licensed under the [MIT License](./LICENSE).\n" +
	"\n" +
	"## Contributors, users and sponsors\n" +
	"The project has received pull requests [from many people](https://github.com/getkin/kin-openapi/graphs/contributors). Thanks to everyone!\n" +
	"\n"

// shortLines is Markdown of many short lines, as CommonMark's examples
// are: a line in the making may be longer than any of them.
const shortLines = "*foo bar*\n\n\na * foo bar*\n\n\na*\"foo\"*\n\n\n* a *\n\n\nfoo*bar*\n\n\n5*6*78\n\n\n_foo bar_\n\n\n_ foo bar_\n\n\n" +
	"a_\"foo\"_\n\n\nfoo_bar_\n\n\n5_6_78\n\n\naa_\"bb\"_cc\n\n\nfoo-_(bar)_\n\n\n_foo*\n\n\n*foo bar *\n\n\n*(*foo)\n\n\n*foo*bar\n\n\n"

// resumeDiff is a patch whose context lines go on as prose or a call
// would after a cut word.
const resumeDiff = "diff --git a/cmd/run/main.go b/cmd/run/main.go\n--- a/cmd/run/main.go\n+++ b/cmd/run/main.go\n@@ -10,16 +10,16 @@ func main() {\n" +
	" \tok, err := s.Resume(ctx, id)\n \tif err != nil || !ok {\n \t\tt.Fatal(ok, err)\n \t}\n-\treturn exitError{1}\n+\treturn exitError{code: 1}\n }\n \n" +
	" var resumeFlag = flag.Bool(\"resume\", false, \"resume a stopped job\")\n \n // resumeFlag is the resume flag that raises the limit a stop reason names.\n" +
	" func raise() {\n \tok, err := s.Resume(ctx, id)\n \tif err != nil || !ok {\n \t\tt.Fatal(ok, err)\n \t}\n }\n"

// extraParts are goldmark's extra test inputs (MIT) cut in an indented
// code block of a list item, the last after its indentation; the answer
// ends with a closing remark.
var extraParts = []string{
	"[x]\n\n[x]: <>\n'\n\n\n[x]\n\n[x]: <>\n\"\n\n\n&#x0000041;\n\n\n[x](\\x01)\n\n\nx \\f\n\n\nThis is a [test][foo\nbar] 1...2..3...\n\n[foo bar]: /\n\n\n_a[b_c_](d)\n\n\n\\t\\t x\\n\n\n\n&#7654321;\n\n",
	"\n&#0100;\n\n\n<1>\n\n<a:>\n\n<a\\f>\n\n< p>\n\n\n[x]\n:>\n\n[o] :x\n\n\n[r]:\n<>\n'\n\n[",
	"o]:\nx\n'\n\n\n[ ![ [b](c) ](x) ](y)\n\n\na\n*  \n\n\n-\n\n-\n\n\n",
	"\\v\n\n\n\\\\\\\\\na\n\n\n- a\n  >\n  b\n\n\n1.\n\n   1. b\n\n-\n\n  - b\n\n\na \\\nb\n\n\n* This is a list item\n    ```\n    This is a test\n\n    ",
	"This line will be dropped.\n    This line will be displayed.\n    ```\n\n\n<a \\r\\nhref='link'>link</a>\n\n<video autoplay muted loop>\\r\\n<source src=\\\"https://example.com/example.mp4\\\" type=\\\"video/mp4\\\">\\r\\nYour browser does not support the video tag.\\r\\n</video>\n\n\n<!--\n-->\n\n\n\\\\\\x00\\\"\n\n\n\nEverything from the start of the section is now there.\n",
}

// extendedDiff is a git diff whose file header carries timestamps (from
// sourcegraph/go-diff's test data, MIT).
const extendedDiff = "diff --git a/vcs/git_cmd.go b/vcs/git_cmd.go\nindex aa4de15..7c048ab 100644\n" +
	"--- oldname\t2009-10-11 15:12:20.000000000 +0000\n+++ newname\t2009-10-11 15:12:30.000000000 +0000\n" +
	"@@ -1,3 +1,4 @@\n+This is an important\n context one\n context two\n context three\n"

// renameDiff is a git diff of a renamed file.
const renameDiff = "diff --git a/docs/Email_Notifications.md b/docs/email-notifications.md\nsimilarity index 100%\n" +
	"rename from docs/Email_Notifications.md\nrename to docs/email-notifications.md\n" +
	"diff --git a/release_notes.md b/release_notes.md\nindex 1c8b8d5..ae2ce27 100644\n--- a/release_notes.md\n+++ b/release_notes.md\n" +
	"@@ -1,2 +1,3 @@\n # Release notes\n+\n Nothing yet.\n"

// releasingDoc ends with a paragraph that reads like a closing remark
// (from open-telemetry/opentelemetry-go's RELEASING.md, Apache-2.0).
const releasingDoc = "### Close the milestone\n\nOnce a release is made, ensure all issues that were fixed and PRs that were merged as part of this release are added to the corresponding milestone.\n" +
	"This helps track what changes were included in each release.\n\n" +
	"- To find issues that haven't been included in a milestone, use this [GitHub search query](https://github.com/open-telemetry/opentelemetry-go/issues?q=is%3Aissue%20no%3Amilestone%20is%3Aclosed)\n" +
	"- To find merged PRs that haven't been included in a milestone, use this [GitHub search query](https://github.com/open-telemetry/opentelemetry-go/pulls?q=is%3Apr+no%3Amilestone+is%3Amerged).\n\n" +
	"Once all related issues and PRs have been added to the milestone, close the milestone.\n\n" +
	"### Close the `Version Release` issue\n\nOnce the todo list in the `Version Release` issue is complete, close the issue.\n"

// loopDoc is the start of a Go file (from the Go toolchain's
// cmd/compile/internal/ssa/likelyadjust.go, BSD).
const loopDoc = "// Copyright 2016 The Go Authors. All rights reserved.\n// Use of this source code is governed by a BSD-style\n// license that can be found in the LICENSE file.\n\npackage ssa\n\nimport (\n\t\"fmt\"\n)\n\n" +
	"type loop struct {\n\theader *Block // The header node of this (reducible) loop\n\touter  *loop  // loop containing this loop\n\n" +
	"\t// Next three fields used by regalloc and/or\n\t// aid in computation of inner-ness and list of blocks.\n\tnBlocks int32 // Number of blocks in this loop but not within inner loops\n" +
	"\tdepth   int16 // Nesting depth of the loop; 1 is outermost.\n\tisInner bool  // True if never discovered to contain a loop\n}\n"

// TestRemarks: preambles and trailers are removed on evidence that
// combines, whatever their wording; a document's own line that reads like
// prose stays.
func TestRemarks(t *testing.T) {
	rows := "id,city,note\n1,Oslo,cold\n2,Rome,warm\n3,Lima,mild\n4,Pune,hot\n"
	optics := strings.Repeat("The Rays which differ in Refrangibility may be parted and sorted from\none another, and that either by Refraction or by Reflexion; and this\n"+
		"being done, the Light of each sort is simple and homogeneal.\n\n", 6) + "Then upon viewing the Prism, I found it was\n"
	pyHead := "# Signal helpers.\n#\n# This library is free software.\n\nimport sys\nimport inspect\n\nfrom . import _gi\n\n\n" +
		strings.Repeat("def _get(obj, name):\n    value = getattr(obj, name, None)\n    return value\n\n\n", 7)
	runCases(t, []mergeCase{
		// Clean cuts before a line of the document's own that reads like
		// a preamble: Markdown introducing its code block (a fence that
		// does not name the format is its own), prose opening a docstring.
		{"a Markdown line introducing a code block", "markdown", []string{"Build it:\n\n```\n  make\n```\n\n", "To see the configuration options, run:\n\n```\n  ./configure --help\n```\n"},
			"Build it:\n\n```\n  make\n```\n\nTo see the configuration options, run:\n\n```\n  ./configure --help\n```\n", "none"},
		{"prose opening a docstring", "code", []string{pyHead + "class Signal(str):\n    \"\"\"", "Object which gives a nice API for creating and binding signals.\n\n    :param name:\n        Name of signal.\n    \"\"\"\n"},
			pyHead + "class Signal(str):\n    \"\"\"Object which gives a nice API for creating and binding signals.\n\n    :param name:\n        Name of signal.\n    \"\"\"\n", "none"},
		// A preamble may quote the document's last words, semicolon and
		// all: the quote is no clause of its own.
		{"a preamble quoting the document's end", "text", []string{optics + "full of Veins running from one end of the Glass to the other; ", "Here's everything after \"Glass to the other;\".\n\nso that\nthe Refraction could not be regular.\n"},
			optics + "full of Veins running from one end of the Glass to the other; so that\nthe Refraction could not be regular.\n", ""},
		{"preamble ending with a full stop, csv", "csv", []string{rows + "5,Ba", "Carrying on from the last row.\n\nku,windy\n6,Cork,wet\n"}, rows + "5,Baku,windy\n6,Cork,wet\n", ""},
		{"preamble of unknown wording breaks json", "json", []string{"[\n  {\"a\": 1},\n  {\"a\": 2},\n", "Below is what was left.\n\n  {\"a\": 3}\n]\n"}, "[\n  {\"a\": 1},\n  {\"a\": 2},\n  {\"a\": 3}\n]\n", ""},
		{"a remark's clauses joined by a semicolon", "text", []string{"The quick brown fox jumps over the la", "I was cut short; picking it back up.\n\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a note framed by a rule of dashes", "text", []string{"The quick brown fox jumps over the la", "-- continued --\n\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a note led by an ellipsis", "text", []string{"The quick brown fox jumps over the la", "...continued\n\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a short label between a cut word and its rest", "text", []string{"The quick brown fox jumps over the la", "Key points:\n\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a short label after a complete line stays", "text", []string{"The quick brown fox jumps over the lazy dog.\n\n", "Key points:\n\nA second paragraph.\n"}, "The quick brown fox jumps over the lazy dog.\n\nKey points:\n\nA second paragraph.\n", ""},
		{"a short note that breaks the format", "csv", []string{rows + "5,Ba", "(cont.)\n\nku,windy\n6,Cork,wet\n"}, rows + "5,Baku,windy\n6,Cork,wet\n", ""},
		{"a re-wrapped repeat of the end is no remark", "markdown", []string{"# Contributing\n\nThank you for helping.\n\nPlease let us know if you\nhave any questions. We are happy", "Please let us know if you have any questions. We are happy to help!\n\n## Filing issues\n\nUse the tracker.\n"}, "# Contributing\n\nThank you for helping.\n\nPlease let us know if you\nhave any questions. We are happy to help!\n\n## Filing issues\n\nUse the tracker.\n", ""},
		{"a re-wrapped repeat of the end is no remark, text", "text", []string{"Thanks for reading. Please let us know if you\nhave any questions or comments", "Please let us know if you have any questions or comments.\n\nThe end.\n"}, "Thanks for reading. Please let us know if you\nhave any questions or comments.\n\nThe end.\n", ""},
		{"a short note that breaks json lines", "jsonl", []string{"{\"a\":1}\n{\"a\":2}\n", "(more)\n{\"a\":3}\n"}, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n", ""},
		{"a short note that breaks json", "json", []string{"[\n  {\"a\": 1},\n  {\"a\": 2", "[cont]\n\n},\n  {\"a\": 3}\n]\n"}, "[\n  {\"a\": 1},\n  {\"a\": 2},\n  {\"a\": 3}\n]\n", ""},
		{"a short note between the halves of a word", "text", []string{"The fox jumps under the fence and under the gate, then und", "(more)\n\ner the bridge.\n"}, "The fox jumps under the fence and under the gate, then under the bridge.\n", ""},
		{"the same short note at every cut", "text", []string{"Source code, documentation and configuration files are sou", "(ctd.)\n\nrce forms. Object forms are compiled from the", "(ctd.)\n\n source.\n"}, "Source code, documentation and configuration files are source forms. Object forms are compiled from the source.\n", ""},
		{"an emphasised word at a cut stays", "markdown", []string{"# Words\n\nfoo_bar_\n\n\nпристаням", "_стремятся_\n\n\naa_bb_cc\n"}, "# Words\n\nfoo_bar_\n\n\nпристаням_стремятся_\n\n\naa_bb_cc\n", ""},
		{"a note in angle brackets", "markdown", []string{"# Notes\n\nThe quick brown fox jumps over the la", "<continued>\n\nzy dog.\n"}, "# Notes\n\nThe quick brown fox jumps over the lazy dog.\n", ""},
		{"an autolink is no note", "markdown", []string{"# Links\n\n<https://example.com/a>\n\n", "<foo@bar.example.com>\n\n<https://example.com/b>\n"}, "# Links\n\n<https://example.com/a>\n\n<foo@bar.example.com>\n\n<https://example.com/b>\n", ""},
		{"a code line in braces is no note", "code", []string{"func f() string {\n\treturn s // ", "{not a block}\n}\n"}, "func f() string {\n\treturn s // {not a block}\n}\n", ""},
		{"the same stock line at every cut", "text", []string{"The quick brown fox jumps over the la", "Thanks for your patience — more below.\n\nzy dog. A second sentence is he", "Thanks for your patience — more below.\n\nre and goes on.\n"}, "The quick brown fox jumps over the lazy dog. A second sentence is here and goes on.\n", ""},
		{"bracketed note", "text", []string{"The quick brown fox jumps over the la", "(continued)\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"emphasised note", "text", []string{"The quick brown fox jumps over the la", "*— continued —*\n\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		// A README may close with an exclamation of its own.
		{"a document's own closing exclamation", "markdown", []string{widgetsDoc[:60], widgetsDoc[60:] + "\nNow go build something great!\n"}, widgetsDoc + "\nNow go build something great!\n", ""},
		// A last paragraph that names a file stays, whatever it says:
		// "full" and "complete" describe documents too.
		{"a last paragraph naming a file in words about being done", "markdown", []string{widgetsDoc[:60], widgetsDoc[60:] + "\nThe full changelog lives in CHANGES.md.\n"}, widgetsDoc + "\nThe full changelog lives in CHANGES.md.\n", ""},
		{"a last paragraph naming a file, saying nothing is done", "markdown", []string{widgetsDoc[:60], widgetsDoc[60:] + "\nAny questions go to SUPPORT.md.\n"}, widgetsDoc + "\nAny questions go to SUPPORT.md.\n", ""},
		// A document that ends without a line break, and a remark right
		// under its last line: one paragraph, whose first line says
		// nothing of the output. The remark stays rather than the line.
		{"a remark right under the document's last line", "markdown", []string{vectorsDoc[:40], vectorsDoc[40:] + "\nLet me know if you need anything else.\n"}, vectorsDoc + "\nLet me know if you need anything else.\n", ""},
		// A project speaks as "we"; a model of itself as "I".
		{"a last paragraph in the project's voice", "markdown", []string{roadmapDoc[:60], roadmapDoc[60:]}, roadmapDoc, ""},
		{"a last paragraph stating the licence", "markdown", []string{cpuidDoc[:len(cpuidDoc)-100], cpuidDoc[len(cpuidDoc)-100:]}, cpuidDoc, ""},
		{"a closing line saying the answer wraps up", "markdown", []string{widgetsDoc[:60], widgetsDoc[60:] + "\nAnd that wraps it up.\n"}, widgetsDoc, ""},
		{"trailer in json after the document's end", "json", []string{"[1, 2,", " 3]\n\nHope that helps! The array is now complete.\n"}, "[1, 2, 3]\n", ""},
		{"a closing line after prose broken off mid-sentence", "text", []string{"Of the Colours of natural Bodies, and the Light that falls\non them, it is to be observed that they reflect one sort of\nLight more copiously than another, and so appear of the colour of", " that sort,\nwhich they reflect most, and all others in less quantity and\nwhence it happens that the Colours of\n\nAnd that brings us to the close of this part.\n"}, "Of the Colours of natural Bodies, and the Light that falls\non them, it is to be observed that they reflect one sort of\nLight more copiously than another, and so appear of the colour of that sort,\nwhich they reflect most, and all others in less quantity and\nwhence it happens that the Colours of\n", ""},
		{"a closing line without talk after a sentence's end stays", "text", []string{"Of the Colours of natural Bodies, and the Light that falls\non them, it is to be observed that they reflect one sort of\nLight more copiously than another, and so appear of the colour of", " that sort,\nwhich they reflect most, and all others in less quantity and\nwhence it happens that they look so.\n\nSuch was the first part of the work.\n"}, "Of the Colours of natural Bodies, and the Light that falls\non them, it is to be observed that they reflect one sort of\nLight more copiously than another, and so appear of the colour of that sort,\nwhich they reflect most, and all others in less quantity and\nwhence it happens that they look so.\n\nSuch was the first part of the work.\n", ""},
		{"a bare fence after the indentation of an open block closes it", "markdown", []string{"* foo\n  ```Makefile\n  foo\n  ", "```\n\n\n* bar\n"}, "* foo\n  ```Makefile\n  foo\n  ```\n\n\n* bar\n", ""},
		{"a word in another script goes on after a preamble", "markdown", []string{shortLines + "пристаням", "Here is the rest:\n\n_стремятся_\n\n\naa_bb_cc\n"}, shortLines + "пристаням_стремятся_\n\n\naa_bb_cc\n", ""},
		{"a list item's text goes on after its marker and a preamble", "markdown", []string{shortLines + "1.", "Here is the rest:\n\n  foo\n\n    - bar\n"}, shortLines + "1.  foo\n\n    - bar\n", ""},
		{"emphasis is no list item after a preamble", "markdown", []string{shortLines + "*£", "Here is the rest:\n\n*bravo.\n\n*€*charlie.\n"}, shortLines + "*£*bravo.\n\n*€*charlie.\n", ""},
		{"a cut word's capitalised rest that the document writes glued", "diff", []string{resumeDiff[:strings.Index(resumeDiff, "Flag is")], resumeDiff[strings.Index(resumeDiff, "Flag is"):]}, resumeDiff, ""},
		{"a call's arguments glued to its name", "diff", []string{resumeDiff[:strings.Index(resumeDiff, "(ok, err)\n \t}")], resumeDiff[strings.Index(resumeDiff, "(ok, err)\n \t}"):]}, resumeDiff, ""},
		{"code cut between two functions keeps its blank line before a closing remark", "code", []string{"def open(path):\n    f = _open(path)\n    return f\n\n\ndef clo", "se(f):\n    f.close()\n    raise\n\n\nHope this helps!\n"}, "def open(path):\n    f = _open(path)\n    return f\n\n\ndef close(f):\n    f.close()\n    raise\n\n", ""},
		{"indentation cut after a blank line goes on as the line before it calls for", "code", []string{"class partial:\n    \"\"\"New function.\n    \"\"\"\n\n    __slots__ = \"func\", \"args\"\n\n ", "   def __new__(cls, func):\n        return func\n"}, "class partial:\n    \"\"\"New function.\n    \"\"\"\n\n    __slots__ = \"func\", \"args\"\n\n    def __new__(cls, func):\n        return func\n", ""},
		{"a line after a cut line's indentation, followed by a line indented the same", "markdown", extraParts, strings.Join(extraParts, "")[:len(strings.Join(extraParts, ""))-len("\nEverything from the start of the section is now there.\n")], ""},
		{"a preamble inside a diff's file header, whose lines are all headers", "diff", []string{extendedDiff[:strings.Index(extendedDiff, "\t2009")], "I'll pick up exactly where the previous response was cut off.\n\n" + extendedDiff[strings.Index(extendedDiff, "\t2009"):strings.Index(extendedDiff, "\t2009")+9], extendedDiff[strings.Index(extendedDiff, "\t2009")+9:]}, extendedDiff, ""},
		{"a preamble after a diff's one-field header line", "diff", []string{renameDiff[:strings.Index(renameDiff, "\nrename from")], "Of course. Next chunk:\n\n" + renameDiff[strings.Index(renameDiff, "\nrename from")+1:]}, renameDiff, ""},
		{"two trailer paragraphs", "jsonl", []string{"{\"a\":1}\n{\"b\"", ":2}\n\nLet me know if you spot any mistakes.\n\nWant me to add anything else?"}, "{\"a\":1}\n{\"b\":2}\n", ""},
		{"trailer right after a diff's only hunk, written in the last chunk", "diff", []string{"diff --git a/x b/x\n--- a/x\n+++ b/x\n", "@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\nThis is where the file stops.\n"}, "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n", ""},
		{"trailer right after a last hunk whose counts hold, an earlier one's short", "diff", []string{"--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n-b\n+c\ndiff -ruN a/y b/y\n--- a/y\n+++ b/y\n", "@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\nI can shorten this if needed.\n"}, "--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n-b\n+c\ndiff -ruN a/y b/y\n--- a/y\n+++ b/y\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n", ""},
		{"trailer right after a last hunk whose counts hold, an earlier file's hunk far short", "diff", []string{"diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1,62 @@\n+a\n+b\ndiff --git a/y b/y\nnew file mode 100644\n--- /dev/null\n+++ b/y\n", "@@ -0,0 +1,2 @@\n+package main\n+\nThat's it! Please review it before using it in production.\n"}, "diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1,62 @@\n+a\n+b\ndiff --git a/y b/y\nnew file mode 100644\n--- /dev/null\n+++ b/y\n@@ -0,0 +1,2 @@\n+package main\n+\n", ""},
		{"an emphasised note closes a markdown answer", "markdown", []string{"# T\n\nSome text of the guide, which goes on for a whi", "le.\n\n**Done.**\n"}, "# T\n\nSome text of the guide, which goes on for a while.\n", ""},
		{"a closing remark that vouches for the output", "text", []string{"The quick brown fox jumps over the la", "zy dog.\n\nThe text should now parse without errors.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a line that starts with a full stop ends the cut line", "markdown", []string{"# Reporting\n\nTell us what happened when you filed the iss", "Continuing from where I left off:\n\nue with the project.\n\n1.  What version are you using?\n2.  What did you do?\n3.  What did you expect to see?\n4", ".  What did you see instead?\n\nGeneral questions go to the mail", "Picking up where I stopped:\n\ning list instead of the tracker.\n"}, "# Reporting\n\nTell us what happened when you filed the issue with the project.\n\n1.  What version are you using?\n2.  What did you do?\n3.  What did you expect to see?\n4.  What did you see instead?\n\nGeneral questions go to the mailing list instead of the tracker.\n", ""},
		{"trailer right after the last record", "csv", []string{rows + "5,Baku,", "windy\nThe CSV is now complete.\n"}, rows + "5,Baku,windy\n", ""},
		{"a comment's text goes on with the comment", "code", []string{"func f() {\n\t// ", "Remaining operands may have references.\n\treturn\n}\n"}, "func f() {\n\t// Remaining operands may have references.\n\treturn\n}\n", ""},
		{"a call's arguments are no note", "code", []string{"func f() {\n\treturn runEnv", "(dir, mode, nil, cmd...)\n}\n"}, "func f() {\n\treturn runEnv(dir, mode, nil, cmd...)\n}\n", ""},
		{"a document's closing advice stays", "markdown", []string{"# Security\n\nReport issues privately to the maintainers", ".\n\nPlease give us 90 days to work on a fix before public exposure.\n"}, "# Security\n\nReport issues privately to the maintainers.\n\nPlease give us 90 days to work on a fix before public exposure.\n", ""},
		{"an emphasised note with an aside in brackets", "csv", []string{rows + "5,Ba", "**Part 3 (continued):**\n\nku,windy\n6,Cork,wet\n"}, rows + "5,Baku,windy\n6,Cork,wet\n", ""},
		{"a numbered part", "code", []string{"package p\n\n// T is a thing.\ntype T struct {\n\tname   string // the name\n\tisJ", "*Part 4:*\nump bool\n}\n"}, "package p\n\n// T is a thing.\ntype T struct {\n\tname   string // the name\n\tisJump bool\n}\n", ""},
		{"a note is read by what it frames, not by its frame", "code", []string{"package p\n\n// T is a thing.\ntype T struct {\n\tname   string // the name\n\tisJ", "_(continued from line 48)_\nump bool\n}\n"}, "package p\n\n// T is a thing.\ntype T struct {\n\tname   string // the name\n\tisJump bool\n}\n", ""},
		{"a call of a blank identifier is code", "code", []string{"package p\n\nfunc f() {\n", "_(continued)\n}\n"}, "package p\n\nfunc f() {\n_(continued)\n}\n", ""},
		{"going back to the output", "code", []string{"package p\n\n// T is a thing.\ntype T struct {\n\tname   string // the name\n\tisJ", "Back to the file.\nump bool\n}\n"}, "package p\n\n// T is a thing.\ntype T struct {\n\tname   string // the name\n\tisJump bool\n}\n", ""},
		{"a line that closes the cut line's code span is no preamble", "markdown", []string{spanDoc[:strings.Index(spanDoc, "`Q")+2], spanDoc[strings.Index(spanDoc, "`Q")+2:]}, spanDoc, ""},
		{"a document's last paragraph with a code span stays", "markdown", []string{releasingDoc[:len(releasingDoc)-150], releasingDoc[len(releasingDoc)-150:]}, releasingDoc, ""},
		// A cut line that ends with a space ends with a whole word: a
		// remark that opens with that word's letters starts nothing over.
		// A cut line of marks alone and a note framed by the same marks.
		{"a note framed by the cut line's marks", "markdown", []string{"*foo *bar baz*\n\n\n*", "**Continued from above:**\n\n[bar*](/url)\n\n\n_foo [bar_](/url)\n"},
			"*foo *bar baz*\n\n\n*[bar*](/url)\n\n\n_foo [bar_](/url)\n", ""},
		// A bracketed line right after a closing bracket, where the
		// document glues the two itself: a Markdown link's destination.
		{"a link's destination after its text is no note", "markdown", []string{"[foo][]\n\n[foo]: /url1\n\n\n[foo]()\n\n[foo]: /url1\n\n\n[foo]", "(not a link)\n\n[foo]: /url1\n"},
			"[foo][]\n\n[foo]: /url1\n\n\n[foo]()\n\n[foo]: /url1\n\n\n[foo](not a link)\n\n[foo]: /url1\n", ""},
		{"a remark after a whole word that it opens with", "text", []string{"The PROOF by Experiments.\n\n_Exper._ 1.\n\nI ", "I'll repeat a few sentences for context, then continue:\n\nI took a black oblong stiff Paper.\n"},
			"The PROOF by Experiments.\n\n_Exper._ 1.\n\nI took a black oblong stiff Paper.\n", ""},
		{"a remark that starts with the cut word's first letters", "text", []string{"This is the first part of the story, and it goes on for a while.\n\nTh", "Thanks for waiting! Here's what comes next!\nis is the second part of it.\n"}, "This is the first part of the story, and it goes on for a while.\n\nThis is the second part of it.\n", ""},
		{"an answer's preamble with an aside, no fence", "json", []string{"This is the dataset. (It is long.)\n\n[\n  {\"a\": 1},\n", "  {\"a\": 2}\n]\n"}, "[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n", ""},
		{"a question closes an answer whose document asks none", "markdown", []string{"# Term\n\nThis repository provides terminal support packages.\n\n## Report Issues\n\nThis repository uses Gerrit for code cha", "nges. The main issue tracker is at go.dev/issues.\n\nWant a version with comments?\n"}, "# Term\n\nThis repository provides terminal support packages.\n\n## Report Issues\n\nThis repository uses Gerrit for code changes. The main issue tracker is at go.dev/issues.\n", ""},
		{"a document that asks questions keeps its last one", "markdown", []string{"# Filing issues\n\nAnswer these questions:\n\n1.  What version of Go are you using?\n2.  What did you do?\n\nThen one more, a short o", "ne.\n\nWant a version with comments?\n"}, "# Filing issues\n\nAnswer these questions:\n\n1.  What version of Go are you using?\n2.  What did you do?\n\nThen one more, a short one.\n\nWant a version with comments?\n", ""},
		{"a paragraph that opens with a small letter, in a document too short to have a language", "markdown", []string{"Package markdown is a Markdown parser and\nHTML generator. It does not ", "As requested, here's more.\n\nhave many bells and whistles.\n"}, "Package markdown is a Markdown parser and\nHTML generator. It does not have many bells and whistles.\n", ""},
		{"a question to the reader closes the answer", "text", []string{"The quick brown fox jumps over the la", "zy dog.\n\nDoes this look right to you?\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"the model speaks of itself where the document never does", "text", []string{"The quick brown fox jumps over the la", "zy dog.\n\nI looked over every sentence twice.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a document that says I keeps its last line", "text", []string{"I went out early, and I saw the fox jump over the la", "zy dog.\n\nI double-checked the gate before I left.\n"}, "I went out early, and I saw the fox jump over the lazy dog.\n\nI double-checked the gate before I left.\n", ""},
		{"a preamble before a repeat of the document's end", "markdown", []string{"# Release\n\nIntro text for the release.\n\n### Notable Changes\n\n", "To keep things tidy:\nNotable Changes\n\n* **buffer**: a fix.\n"}, "# Release\n\nIntro text for the release.\n\n### Notable Changes\n\n* **buffer**: a fix.\n", ""},
		{"a line with a code span and no talk goes on with the cut line", "markdown", []string{"# Errors\n\nFor instance, an existing ", "`Error` such as:\n\n```js\nconst err = new TypeError(`bad`);\n```\n\nCan be replaced.\n"}, "# Errors\n\nFor instance, an existing `Error` such as:\n\n```js\nconst err = new TypeError(`bad`);\n```\n\nCan be replaced.\n", ""},
		{"a preamble that names a code span", "markdown", []string{"# Errors\n\nSee the `codes` object for the list of the errors we define and their meaning.\n\nThe next one is ", "Continuing from `codes`:\n\nthe type error.\n"}, "# Errors\n\nSee the `codes` object for the list of the errors we define and their meaning.\n\nThe next one is the type error.\n", ""},
		{"a preamble before a restart from the top with its blank lines changed", "code", []string{loopDoc[:len(loopDoc)-60], "For completeness, the full code.\n" + strings.Replace(strings.Replace(loopDoc, "ssa\n\n", "ssa\n", 1), ")\n\n", ")\n\n\n", 1)}, loopDoc, ""},
		{"a remark that starts with the cut word's first letters, in a document of too few words", "markdown", []string{"# Go Telemetry\n\nTh", "The rest of the Markdown follows.\nis repository holds the Go Telemetry server code.\n"}, "# Go Telemetry\n\nThis repository holds the Go Telemetry server code.\n", ""},
		{"a preamble that quotes the document's last lines", "markdown", []string{"# Telemetry\n\nLinting is not a strict requirement enforced by CI.\n\n### Installing npm Dependencies:\n\n1. Install ", "Here's everything after \"Installing npm Dependencies:\":\n\n[docker](https://docs.docker.com/get-docker/)\n2. Run `./npm install`\n"}, "# Telemetry\n\nLinting is not a strict requirement enforced by CI.\n\n### Installing npm Dependencies:\n\n1. Install [docker](https://docs.docker.com/get-docker/)\n2. Run `./npm install`\n", ""},
		{"a document's last paragraph that names what the document names stays", "markdown", []string{"# http2\n\nThis directory holds two implementations of HTTP/2.\n\nThe original implementation (no longer the source of truth).\n\nThe wrapping implementation wraps net/ht", "tp.\n\nThe original implementation is used when the Go version is less than 1.27.\n"}, "# http2\n\nThis directory holds two implementations of HTTP/2.\n\nThe original implementation (no longer the source of truth).\n\nThe wrapping implementation wraps net/http.\n\nThe original implementation is used when the Go version is less than 1.27.\n", ""},
		{"a document's last paragraph that it wrote before stays", "markdown", []string{"# websocket\n\n#### gobwas/ws\n\nIt has a flexible API for performance.\n\nHowever it is quite bloated. See https://pkg.go.dev/github.com/gobwas/ws\n\nWhen writing idiomatic Go, this package will be faster and easier to use.\n\n#### lesismal/nbio\n\nIt is similar to gobwas/ws in that the API is event dri", "ven.\n\nHowever it is quite bloated. See https://pkg.go.dev/github.com/lesismal/nbio\n\nWhen writing idiomatic Go, this package will be faster and easier to use.\n"}, "# websocket\n\n#### gobwas/ws\n\nIt has a flexible API for performance.\n\nHowever it is quite bloated. See https://pkg.go.dev/github.com/gobwas/ws\n\nWhen writing idiomatic Go, this package will be faster and easier to use.\n\n#### lesismal/nbio\n\nIt is similar to gobwas/ws in that the API is event driven.\n\nHowever it is quite bloated. See https://pkg.go.dev/github.com/lesismal/nbio\n\nWhen writing idiomatic Go, this package will be faster and easier to use.\n", ""},
		{"'different' names no diff", "markdown", []string{"# Redshift\n\nThis driver is deprecated in favour of the postgres dr", "iver.\n\nRedshift is PostgreSQL compatible but has some specific features that require slightly different behavior.\n"}, "# Redshift\n\nThis driver is deprecated in favour of the postgres driver.\n\nRedshift is PostgreSQL compatible but has some specific features that require slightly different behavior.\n", ""},
		{"a closing remark in the model's voice names the output in the document's words too", "markdown", []string{"# Files\n\nEach file holds one table. The file's name is the table's.\n\nA file that is empty is skip", "ped.\n\nYou can paste this straight into a file!\n"}, "# Files\n\nEach file holds one table. The file's name is the table's.\n\nA file that is empty is skipped.\n", ""},
		{"a restart of the cut line is no preamble", "text", []string{"The first line of it.\nA second line here.\nA", "A third line follows.\n"}, "The first line of it.\nA second line here.\nA third line follows.\n", ""},
	})
}

// TestEnvelopeRecordsRemovals: every byte the envelope step removes is on
// record, with why and the evidence, and stands in the chunk it came from.
func TestEnvelopeRecordsRemovals(t *testing.T) {
	chunks := chunksOf(
		"Here is the JSON:\n\n```json\n[\n  {\"a\": 1},\n",
		"Sure! Continuing from where I left off:\n\n  {\"a\": 2}\n]\n```\n\nLet me know if you need more.\n",
	)
	res, err := Merge(Options{Format: "json"}, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n" || !res.Success {
		t.Fatalf("content %q (success %v, %s)", res.Content, res.Success, res.Error)
	}
	whys := map[string]int{}
	for _, r := range res.Envelope {
		whys[r.Why]++
		if !strings.Contains(chunks[r.Chunk].Text, r.Removed) {
			t.Errorf("removal %q is not in chunk %d", r.Removed, r.Chunk)
		}
		if (r.Why == WhyPreamble || r.Why == WhyTrailer) && len(r.Evidence) == 0 {
			t.Errorf("removal %+v gives no evidence", r)
		}
	}
	for _, w := range []string{WhyPreamble, WhyUnwrappedFence, WhyTrailer} {
		if whys[w] == 0 {
			t.Errorf("no %s removal in %+v", w, res.Envelope)
		}
	}
}

// TestRestartsOfAnyLength: a continuation that starts the document over,
// from its top or from any line, and reproduces it up to the cut, exactly
// or with its whitespace changed, is joined after the reproduction,
// however long the document.
func TestRestartsOfAnyLength(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; b.Len() < 40<<10; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`  {"id": ` + strings.Repeat("7", 1+i%5) + `, "name": "record ` + string(rune('a'+i%26)) + `", "seq": "` + strings.Repeat("x", i%13) + `"}`)
	}
	b.WriteString("\n]\n")
	doc := b.String()
	cut := len(doc) - 300
	compact := strings.NewReplacer(": ", ":", ",\n  ", ",\n", "[\n  ", "[\n").Replace(doc[:cut])
	// Cut right after an element: the reproduction restates the "[" it
	// opened with, which is no structure to take away first.
	elemEnd := strings.LastIndexByte(doc[:cut], '}') + 1
	cases := []struct {
		name, restart string
		cut           int
	}{
		{"from the top, exactly", doc[:cut], cut},
		{"from the top, whitespace changed", compact, cut},
		{"from a line far back", doc[strings.IndexByte(doc[1000:], '\n')+1001 : cut], cut},
		{"from the top, exactly, cut after an element", doc[:elemEnd], elemEnd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Merge(Options{Format: "json"}, chunksOf(doc[:tc.cut], tc.restart+doc[tc.cut:]))
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != doc || !res.Success {
				t.Fatalf("merge differs (success %v, %s; joins %+v)", res.Success, res.Error, res.Joins)
			}
		})
	}
}

// TestShortRestarts: a document of a few short lines, cut early, is
// restarted from the top with its blank lines changed; one that is a block
// written over twice may be going on with its next copy, and stays whole.
func TestShortRestarts(t *testing.T) {
	goLoop := "package trace\n\nfunc (g *generator) finish(ctx *context) {\n\tfor _, gs := range g.states {\n\t\tgs.finish(ctx)\n\t\tif gs.focus {\n\t\t\tctx.focus = gs\n\t\t}\n\t\tctx.count++\n\t\tctx.total += gs.total\n\t\tctx.last = gs.id\n\t\tctx.done = true\n\t\tctx.seen[gs.id] = true\n"
	runCases(t, []mergeCase{
		{"blank lines dropped", "markdown", []string{"foo _____\n\n\nfoo __\\___\n\n\nfoo", "foo _____\n\nfoo __\\___\n\n\nfoo __*__\n\n\n__foo_\n"},
			"foo _____\n\n\nfoo __\\___\n\n\nfoo __*__\n\n\n__foo_\n", methodReproduction},
		{"a cut line restarted", "markdown", []string{"[]\n\n[]: /uri\n\n\n[\n ]\n\n[\n", "[]\n[]: /uri\n\n[\n ]\n\n[\n ]: /uri\n\n\n[foo][]\n"},
			"[]\n\n[]: /uri\n\n\n[\n ]\n\n[\n ]: /uri\n\n\n[foo][]\n", methodReproduction},
		// A document of one whole line of words (a title), started over
		// (re-spaced: the exact step does not read it).
		{"a title restarted with the text after it", "markdown", []string{"# Contributing to Go\n", "#  Contributing to Go\n\nGo is an open source project.\n"},
			"# Contributing to Go\n\nGo is an open source project.\n", methodReproduction},
		// The document's first content is its start: a document that
		// opens with a tab is restarted from the top all the same.
		{"a document that opens with indentation restarted", "markdown", []string{"\tfoo\tbaz\t\tbim\n\n\n  \tfoo\tbaz\t\tbim\n\n\n    a\ta\n    ὐ\ta\n\n\n",
			"\tfoo\tbaz\t\tbim\n\n  \tfoo\tbaz\t\tbim\n\n\n    a\ta\n    ὐ\ta\n\n\n  - foo\n\n\tbar\n"},
			"\tfoo\tbaz\t\tbim\n\n\n  \tfoo\tbaz\t\tbim\n\n\n    a\ta\n    ὐ\ta\n\n\n  - foo\n\n\tbar\n", methodReproduction},
		{"a block written twice goes on", "markdown", []string{"foo  bar\nfoo  bar\n", "foo bar\nfoo bar\nbaz\n"},
			"foo  bar\nfoo  bar\nfoo bar\nfoo bar\nbaz\n", ""},
		// A document of one line, started over from its first byte with
		// its spaces changed.
		{"a one-line document restarted re-spaced", "markdown", []string{"See [src/cmd/compile/internal/types2/README.md]",
			"See  [src/cmd/compile/internal/types2/README.md](https://cs.opensource.google/go/go/+/master).\n"},
			"See [src/cmd/compile/internal/types2/README.md](https://cs.opensource.google/go/go/+/master).\n", methodReproduction},
		// The cut line started over from the blank line, or the blank
		// lines, before it: kept, the line would be followed by a line
		// that starts with all of it, which the document never writes.
		{"a cut line restarted from the blank line before it", "markdown", []string{"## Filing issues\n\nWhen [fil", "\nWhen [filing an issue](https://golang.org/issue/new), make sure\n"},
			"## Filing issues\n\nWhen [filing an issue](https://golang.org/issue/new), make sure\n", methodStructural},
		{"a cut line restarted from two blank lines before it", "markdown", []string{"__foo_\n\n\n_foo__\n\n\nfoo _____\n\n\nfoo __", "\n\nfoo __\\___\n\n\nfoo __*__\n"},
			"__foo_\n\n\n_foo__\n\n\nfoo _____\n\n\nfoo __\\___\n\n\nfoo __*__\n", methodStructural},
		// A cut line of punctuation alone too ("-", "[!"): kept, the
		// repeat would leave "-" as a line and "- foo" after it.
		{"a cut line of punctuation restarted from the blank lines before it", "markdown", []string{"-one\n\n2.two\n\n\n-", "\n\n- foo\n\n\n  bar\n"},
			"-one\n\n2.two\n\n\n- foo\n\n\n  bar\n", methodStructural},
		{"a badge's opening restarted from the blank line before it", "markdown", []string{"# Go terminal/console support\n\n[!", "\n[![Go Reference](https://pkg.go.dev/badge/golang.org/x/term.svg)](https://pkg.go.dev/golang.org/x/term)\n"},
			"# Go terminal/console support\n\n[![Go Reference](https://pkg.go.dev/badge/golang.org/x/term.svg)](https://pkg.go.dev/golang.org/x/term)\n", methodStructural},
		// A cut line of indentation alone, in code that writes no line of
		// blanks: kept, the repeat would leave one.
		{"indentation restarted from the blank line before it", "code", []string{goLoop + "\n\t", "\n\t\t// Tell the emitter.\n\t\temit(gs)\n\t}\n}\n"},
			goLoop + "\n\t\t// Tell the emitter.\n\t\temit(gs)\n\t}\n}\n", methodStructural},
		// Where the document writes such lines, the blank one may be its own.
		{"indentation in code that writes lines of blanks goes on", "code", []string{strings.Replace(goLoop, "\n\n", "\n\t\n", 1) + "\n\t", "\n\t\t// Tell the emitter.\n\t\temit(gs)\n\t}\n}\n"},
			strings.Replace(goLoop, "\n\n", "\n\t\n", 1) + "\n\t\n\t\t// Tell the emitter.\n\t\temit(gs)\n\t}\n}\n", ""},
		// After a preamble, the line break the text opens with may be the
		// preamble's separator: punctuation alone tells nothing there.
		{"punctuation after a preamble's blank line goes on", "markdown", []string{"* Foo\n* * *\n* Bar\n\n\n- Foo\n- * * *\n\n\n# foo\n## foo\n### foo\n#### foo\n##### foo\n###### foo\n\n\n##",
			"Sure, let's keep going!\n\n##### foo\n\n\n#5 bolt\n"},
			"* Foo\n* * *\n* Bar\n\n\n- Foo\n- * * *\n\n\n# foo\n## foo\n### foo\n#### foo\n##### foo\n###### foo\n\n\n####### foo\n\n\n#5 bolt\n", ""},
		{"a line the document writes alone is not restarted", "markdown", []string{"```\n<x\n```\n\n<x", "\n<x>\n"},
			"```\n<x\n```\n\n<x\n<x>\n", ""},
		{"a document that writes a line before its prefix goes on", "markdown", []string{"[foo]\n[foo]: /url \"title\"\n\n\n[*foo* bar]", "\n[*foo* bar]: /url \"title\"\n"},
			"[foo]\n[foo]: /url \"title\"\n\n\n[*foo* bar]\n[*foo* bar]: /url \"title\"\n", ""},
	})
}

// TestRestartWhereTheEndRepeats: a document whose last lines wrote their
// content before with other whitespace (a value restated in the next
// field) is restarted from the top with its indentation changed. A short
// match up to whitespace could be the document's next copy; the whole
// document from its first byte cannot.
func TestRestartWhereTheEndRepeats(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; i < 12; i++ {
		cell := fmt.Sprintf("<td>%d</td>\\n<td>row %c</td>", i*7, 'a'+i)
		fmt.Fprintf(&b, "  {\n    \"markdown\": \"<table>\\n  <tr>\\n  %s\",\n    \"html\": \"<table>\\n<tr>\\n%s\"\n  },\n", cell, cell)
	}
	last := "<table>\\n  <tr>\\n  <td>Hello there</td>\\n  <td>General Kenobi</td>\\n  <td>You are a bold one</td>\\n  </tr>\\n</table>"
	fmt.Fprintf(&b, "  {\n    \"markdown\": \"%s\",\n    \"html\": \"%s\"\n  }\n]\n", last, strings.ReplaceAll(last, "\\n  ", "\\n"))
	doc := b.String()
	cut := strings.LastIndex(doc, "</tr>") - 3
	restart := strings.ReplaceAll(strings.ReplaceAll(doc, "\n    ", "\n\t\t"), "\n  ", "\n\t")
	at := strings.LastIndex(restart, "</tr>") - 3
	res, err := Merge(Options{Format: "json"}, chunksOf(doc[:cut], restart[:at]+doc[cut:]))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != doc || !res.Success {
		t.Fatalf("merge differs (success %v, %s; joins %+v)\n%s", res.Success, res.Error, res.Joins, res.Content)
	}
}

// TestRestartOfADocumentThatEndsAsItOpens: a document that ends with the
// block it opens with (a patch deleting the same empty file twice), cut in
// that last block and restarted from the top with its whitespace changed,
// is joined after the reproduction: the continuation's head also matches
// the last block alone, exactly, but a next copy of that block would go on with
// the whole document again.
func TestRestartOfADocumentThatEndsAsItOpens(t *testing.T) {
	block := "diff --git a/notes.txt~ b/notes.txt~\ndeleted file mode 100644\nindex e69de29bb2d1d6434b8b29ae775ad8c2e48c5391..0000000000000000000000000000000000000000\n"
	var b strings.Builder
	b.WriteString(block)
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&b, "diff --git a/f%d.txt b/f%d.txt\ndeleted file mode 100644\nindex %07x..0000000\n--- a/f%d.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-line %d of the old file\n", i, i, 0xabc123*(i+1), i, i)
	}
	b.WriteString(block)
	doc := b.String()
	cut := strings.LastIndex(doc, "deleted file") + 2
	// Re-laid after its first block, which it repeats as it is.
	restart := block + strings.ReplaceAll(doc[len(block):], "\n", "\n\n")
	at := strings.LastIndex(restart, "deleted file") + 2
	res, err := Merge(Options{Format: "diff"}, chunksOf(doc[:cut], restart[:at]+doc[cut:]))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != doc {
		t.Fatalf("merge differs (joins %+v)\n%s", res.Joins, res.Content)
	}
}

// TestRestartCutInARule: a document cut in a rule of dashes, whose last
// content holds no word to look for, restarted from the top with its
// lines rewrapped, is joined after the reproduction.
func TestRestartCutInARule(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Traces\n\nThe traces below were taken from\nthe scheduler's test runs.\n\n")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "## Run %d\n\n```\nG1            G2\n%s\nlock(mu%d)\n```\n\n", i, strings.Repeat("-", 62), i)
	}
	doc := b.String()
	cut := strings.LastIndex(doc, "G2\n") + 3 + 40
	restart := strings.Replace(doc, "from\nthe", "from the", 1)
	at := strings.LastIndex(restart, "G2\n") + 3 + 40
	res, err := Merge(Options{Format: "markdown"}, chunksOf(doc[:cut], restart[:at]+doc[cut:]))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != doc || res.Joins[0].Method != methodReproduction {
		t.Fatalf("merge differs (joins %+v)\n%s", res.Joins, res.Content)
	}
}

// TestDocumentLanguage: the document's byte n-gram model says that text
// going on with a cut word fits the cut better than it fits after a
// remark, and that English prose reads unlike code.
func TestDocumentLanguage(t *testing.T) {
	code := strings.Repeat("func add(a, b int) int {\n\treturn a + b\n}\n\nfunc sub(a, b int) int {\n\treturn a - b\n}\n\n", 40)
	l, ok := readLanguage(code+"func mul(a, b int) int {\n\tret", "Sure, here is the rest of the file:", "\n\n", "urn a * b\n}\n")
	if !ok {
		t.Fatal("no language read from a long document")
	}
	if l.goesOn < 2 {
		t.Errorf("goesOn = %.2f: the rest of a cut word should fit the cut", l.goesOn)
	}
	if l.foreign < 1.5 {
		t.Errorf("foreign = %.2f: English should read unlike Go code", l.foreign)
	}
	if _, ok := readLanguage("short", "Sure:", "\n", "x"); ok {
		t.Error("a language read from a document too short to have one")
	}
}

// TestLineBreakAfterPreamble: the line break between a preamble and the
// text after it is read by the document's own text: after punctuation,
// the kind of byte it writes after that mark.
func TestLineBreakAfterPreamble(t *testing.T) {
	prose := "Results, as before, are kept for a week, and each run, once done, writes a note.\n"
	wrapped := "Totals came out even,\nbut the counts did not,\nso the run was repeated,\nand the logs were kept.\n"
	paragraphs := strings.Repeat("The queue hands each chunk to a worker, which asks the model for the rest\n"+
		"of the answer and stores what it wrote before it hands the next one over\nto the queue again.\n\n"+
		"- one item\n\n- another item\n\n- a third item, longer\n\n", 3)
	examples := strings.Repeat("Foo\nbar\n---\nbaz\n\n\n", 5)
	// Go's crypto/internal/boring/README.md, cut inside "their".
	boring := "We have been working inside Google on a fork of Go that uses\n" +
		"BoringCrypto (the core of [BoringSSL](https://boringssl.googlesource.com/boringssl/))\n" +
		"for various crypto primitives, in furtherance of some work related to FIPS 140.\n" +
		"We have heard that some external users of Go would be\n" +
		"interested in this code as well, so we have published this code\n" +
		"here in the main Go repository behind the setting GOEXPERIMENT=boringcrypto.\n\n" +
		"Use of GOEXPERIMENT=boringcrypto outside Google is _unsupported_.\n" +
		"This mode is not part of the [Go 1 compatibility rules](https://go.dev/doc/go1compat),\n" +
		"and it may change incompatibly or break in other ways at any time.\n\n" +
		"To be clear, we are not making any statements or representations about\n" +
		"the suitability of this code in relation to the FIPS 140 standard.\n" +
		"Interested users will have to evaluate for themselves whether the code\n" +
		"is useful for the"
	cases := []struct {
		name, doc, text string
		keep            bool
		kind            string // the format: text unless "markdown" or "code"
	}{
		{"after a comma the document breaks its lines", wrapped + "On the second machine,", "\nthe totals held.\n", true, ""},
		{"after a comma prose goes on with a space", prose + "Later, once the run ended,", "\n the note was written.\n", false, ""},
		// Paragraphs wrapped at a width, each ending short, between
		// one-line items: the text after the break would make the cut line
		// twice as long as the paragraphs' lines.
		{"after a scope's \"::\" a name goes on", prose + "However, ThreadContext::", "\nOnFinished uses the head, assuming it is set.\n", false, ""},
		{"wrapped paragraphs ending short", paragraphs + "The workers keep every chunk of the answer in the store there", "\nare no other copies of it anywhere, so the store is where to look for them\n" + paragraphs, true, ""},
		// Lines all short, none wrapped: a word cut in two goes on, however
		// long that makes its line.
		{"a cut word goes on in a line longer than the others", examples + "    a simple\n      indented c", "\node block\n\n\n  - foo\n", false, "markdown"},
		// Backticks glued to a word close a code span; this document writes
		// them at line starts only.
		// In code a line break stands for no space: a name cut before its
		// parameters goes on with them, though the document writes
		// "func (f *File)" often.
		{"a name's parameters go on after a preamble in code", goMethods + "func findSymbol", "\n(f *File, name string) (*Symbol, error) {\n\treturn nil, nil\n}\n", false, "code"},
		// How often the document writes "he" + "ir" with a line break
		// between them or none is its spelling, not where it breaks lines.
		{"a word cut between two letters goes on", boring, "\nir own purposes.\n\n---\n\nThis directory holds the core of the BoringCrypto implementation\n", false, "markdown"},
		// Go's CONTRIBUTING.md: its paragraphs end in blank lines, its
		// numbered questions do not; the cut fell after the first one.
		{"a tight numbered list goes on", "# Contributing to Go\n\nGo is an open source project.\n\n" +
			"It is the work of hundreds of contributors. We appreciate your help!\n\n## Filing issues\n\n" +
			"When [filing an issue](https://golang.org/issue/new), make sure to answer these\nfive questions:\n\n" +
			"1.  What version of Go are you using (`go version`)?\n",
			"\n2.  What operating system and processor architecture are you using?\n3.  What did you do?\n", false, "markdown"},
		{"a run of backticks after a word starts its line", "```\n<\n >\n```\n\n\n~~~\n<\n >\n~~~\n\n\n``\nfoo", "\n``\n\n\n```\naaa\n```\n", true, "markdown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f format = &textFormat{}
			switch tc.kind {
			case "markdown":
				f = &markdownFormat{}
			case "code":
				f = &codeFormat{}
			}
			f.observe(tc.doc, 0)
			c := envCtx{site: f.site(tc.doc), blank: f.traits().blank}
			if got := blankLineIsNew(tc.text, c); got != tc.keep {
				t.Errorf("blankLineIsNew = %v, want %v", got, tc.keep)
			}
		})
	}
}

// TestGapsByRoomLeft: in wrapped prose a sentence ends at the end of
// long lines inside a paragraph too; only a line with room left for the
// next line's first word ends one, and the most specific count of gaps
// takes only such lines.
func TestGapsByRoomLeft(t *testing.T) {
	body := strings.Repeat("The queue hands each chunk to a worker, which asks the model for more.\n"+
		"It stores what it wrote before it hands the next one over to the queue.\nThen it waits.\n\n", 6)
	n := countGaps(body, "Then it waits.", "The queue hands each chunk to a worker.", 1)
	if n[0][0] <= n[0][1] {
		t.Errorf("lines with room left: %d gaps of a blank line, %d of none; want more blank", n[0][0], n[0][1])
	}
	if n[1][0] >= n[1][1] {
		t.Errorf("all sentence ends: %d gaps of a blank line, %d of none; want fewer blank", n[1][0], n[1][1])
	}
}

// TestUnframe: a note's frame is stripped when the marks that open it close
// it in mirror image around plain text; brackets inside must pair.
func TestUnframe(t *testing.T) {
	for _, c := range []struct {
		in, body string
		ok       bool
	}{
		{"(continued)", "continued", true},
		{"*(continued)*", "continued", true}, // one run of marks opens it
		{"**Part 3 (continued):**", "Part 3 (continued):", true},
		{"[Continuing from row 42]", "Continuing from row 42", true},
		{"-- continued --", "continued", true},
		{"(a) and (b)", "", false},           // two notes, not one
		{"**a** and **b**", "", false},       // emphasis inside
		{"**see (a:**", "", false},           // a bracket that does not close
		{"<foo@bar.example.com>", "", false}, // angle brackets hold plain words only
		{"{not a block}", "", false},         // braces are never a frame
	} {
		body, ok := unframe(c.in)
		if ok != c.ok || ok && body != c.body {
			t.Errorf("unframe(%q) = %q, %v; want %q, %v", c.in, body, ok, c.body, c.ok)
		}
	}
}

// TestHasWord: patterns match whole words, stems the words they begin, and
// '#' a number in digits or words.
func TestHasWord(t *testing.T) {
	for _, c := range []struct {
		line, pattern string
		want          bool
	}{
		{"continuing the table", "continu*", true},
		{"discontinued", "continu*", false},
		{"part 14 of the file", "part #", true},
		{"part two of the file", "part #", true},
		{"part b of the file", "part #", false},
		{"apart 2", "part #", false},
		{"let me know", "let me know", true},
		{"let me now", "let me know", false},
	} {
		if _, got := hasWord(c.line, []string{c.pattern}); got != c.want {
			t.Errorf("hasWord(%q, %q) = %v, want %v", c.line, c.pattern, got, c.want)
		}
	}
}

// TestToldRestart: a preamble that says the model starts over, and a
// continuation that opens with the whole document, whitespace aside: a
// restart, however short the document.
func TestToldRestart(t *testing.T) {
	runCases(t, []mergeCase{
		{"markdown, exactly", "markdown", []string{"> foo\n-", "Restarting the guide to keep it consistent:\n> foo\n-----\n\n\nbar\n"}, "> foo\n-----\n\n\nbar\n", ""},
		{"json lines, spacing changed", "jsonl", []string{"{\"Action\":\"start\"}\n{\"A",
			"I'll start over from the top so the output is complete:\n\n{\"Action\": \"start\"}\n{\"Action\":\"output\"}\n"},
			"{\"Action\":\"start\"}\n{\"Action\":\"output\"}\n", ""},
	})
}

// TestCapitalsGoOn: a line whose first word is in capitals goes on with a
// cut word in capitals; remarks open with words, and "I", "A", "OK".
func TestCapitalsGoOn(t *testing.T) {
	for _, tc := range []struct {
		partial, line string
		want          bool
	}{
		{"Anonymous FT", "P is available at ftp://foo.bar.baz.", true},
		{"the HT", "TP spec says so.", true},
		{"Anonymous FT", "Picking up where I left off:", false},
		{"Anonymous FT", "I'll go on from here.", false},
		{"Anonymous FT", "OK, the rest:", false},
		{"Anonymous F", "TP is available.", true},
		{"bugs are in B", "UGS. All authors are mentioned in AUTHORS.", true},
		{"see item A", "I'll go on from here.", false},
		{"Chapter I", "OK, the rest:", false},
		{"Anonymous ft", "P is available.", false},
		{"aFT", "P is available.", false},
	} {
		if got := capitalsGoOn(tc.partial, tc.line); got != tc.want {
			t.Errorf("capitalsGoOn(%q, %q) = %v, want %v", tc.partial, tc.line, got, tc.want)
		}
	}
}

// TestChatEndings: how chat ends a remark (an emoji, an emoticon, a short
// sentence or an emphasised note after code) is a remark's form; a
// document's own line that ends so stays.
func TestChatEndings(t *testing.T) {
	rows := "id,city,note\n1,Oslo,cold\n2,Rome,warm\n3,Lima,mild\n4,Pune,hot\n"
	code := "import os\n\n\ndef home():\n    return os.environ.get(\"HOME\", \"/\")\n\n\ndef user():\n    return os.environ.get(\"USER\")\n"
	readme := "# Oslo tools\n\nA few tools for the city.\n\n## Install\n\nRun the installer and follow the prompts on the screen.\n\n## Thanks\n\n"
	runCases(t, []mergeCase{
		{"a trailer ending with an emoji", "csv", []string{rows + "5,Ba", "ku,windy\n\nHope this helps! 😊\n"}, rows + "5,Baku,windy\n", ""},
		{"a trailer ending with an emoticon", "json", []string{"[1, 2,", " 3]\n\nLet me know if anything looks off :)\n"}, "[1, 2, 3]\n", ""},
		{"a preamble ending with an emoji", "text", []string{"The quick brown fox jumps over the la", "No problem — continuing 👇\n\nzy dog.\n"}, "The quick brown fox jumps over the lazy dog.\n", ""},
		{"a preamble after a cut line of indentation in code", "code", []string{code + "\n\ndef both():\n    return g(\n        h(\n            home(),\n     ", "As before, continuing exactly where I was cut off.\n       user(),\n        ),\n    )\n"}, code + "\n\ndef both():\n    return g(\n        h(\n            home(),\n            user(),\n        ),\n    )\n", ""},
		{"a short sentence after code", "code", []string{code[:40], code[40:] + "\nThanks for your patience!\n"}, code, ""},
		{"an emphasised note after code", "code", []string{code[:40], code[40:] + "\n**That's everything.**\n"}, code, ""},
		{"a closing offer in words of its own", "markdown", []string{readme[:30], readme[30:] + "Thanks to everyone who helped.\n\nAny other questions, just say the word.\n"}, readme + "Thanks to everyone who helped.\n", ""},
		{"a closing remark that the copy is whole", "markdown", []string{readme[:30], readme[30:] + "Thanks to everyone who helped.\n\nThere it is, start to finish.\n"}, readme + "Thanks to everyone who helped.\n", ""},
		{"a closing remark that hands over the remainder", "markdown", []string{readme[:30], readme[30:] + "Thanks to everyone who helped.\n\nRemainder delivered as requested.\n"}, readme + "Thanks to everyone who helped.\n", ""},
		{"a closing remark led by an emoji", "markdown", []string{readme[:30], readme[30:] + "Thanks to everyone who helped.\n\n🎉 All done!\n"}, readme + "Thanks to everyone who helped.\n", ""},
		{"a document's line led by an emoji stays", "markdown", []string{readme[:30], readme[30:] + "🚀 Fast builds for every city.\n"}, readme + "🚀 Fast builds for every city.\n", ""},
		{"a document's line ending with an emoji stays", "markdown", []string{readme[:30], readme[30:] + "Built by the Oslo team ❤️\n"}, readme + "Built by the Oslo team ❤️\n", ""},
	})
}

// TestIndentationCuts: a continuation that starts with more of the
// indentation the document was cut in goes on with it where the line
// before calls for the whole of it: a bracket left open aligns the next
// line with its contents, and the document's indentation step is the one
// it uses most, not a stray one.
func TestIndentationCuts(t *testing.T) {
	aligned := "class Prop:\n    def __init__(self, getter=None, setter=None,\n                 nick='', blurb=''):\n        self.getter = getter\n"
	cutAligned := strings.Index(aligned, "nick") - 9
	stray := "class Lexer:\n    delims = (r'a'\n     r'b')\n    names = [\n        'x',\n        'y',\n    ]\n\n    tokens = {\n        'root': [\n            (r'z', Text),\n        ],\n    }\n"
	cutStray := strings.Index(stray, "'root'") - 5
	hung := "    def recv(self, flags=None):\n        \"\"\"\n        :param flags: (optional) The only supported flag is ``MSG_PEEK``,\n" +
		"            all other flags are ignored.\n        \"\"\"\n        return self._recv(flags)\n"
	cutHung := strings.Index(hung, "all other") - 7
	runCases(t, []mergeCase{
		{"a line aligned with an open bracket's contents", "code", []string{aligned[:cutAligned], aligned[cutAligned:]}, aligned, ""},
		{"one stray space is no indentation step", "code", []string{stray[:cutStray], stray[cutStray:]}, stray, ""},
		{"a docstring's line hung where its writer put it", "code", []string{hung[:cutHung], hung[cutHung:]}, hung, "none"},
	})
}

// TestSaysWord: a preamble's words count unless a negation denies them.
func TestSaysWord(t *testing.T) {
	cases := []struct {
		line string
		ws   []string
		want bool
	}{
		{"i'll repeat a few lines for context, then continue:", repeatWords, true},
		{"picking up a little earlier so the context is clear.", repeatWords, true},
		{"i'll continue without repeating what was already sent.", repeatWords, false},
		{"no need to start over; here is the rest.", overWords, false},
		{"i won't repeat anything, here's the rest:", repeatWords, false},
		{"starting again from the top:", overWords, true},
	}
	for _, tc := range cases {
		if got := saysWord(tc.line, tc.ws); got != tc.want {
			t.Errorf("saysWord(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// TestDocumentEndingsThatTalk: a document's last paragraph that sends the
// reader elsewhere (a file, an address, "See LICENSE"), runs longer than a
// model's closing sentence, or names things without pointing at the
// output stays; a closing remark that talks more than any of the
// document's paragraphs goes.
func TestDocumentEndingsThatTalk(t *testing.T) {
	readme := "# handlers\n\nPackage handlers is a collection of handlers for use with the net/http package.\n\n" +
		"## Example\n\nA simple example of logging requests and compressing responses follows below.\n\n" +
		"The handlers wrap any other handler and may be nested in any order that suits the server.\n\n" +
		"Each handler keeps the interface of the standard library, so that it composes with others.\n\n## License\n\n"
	spec := "# Tabs\n\nTabs in lines are not expanded to spaces.\n\n" + strings.Repeat("\tfoo\tbaz\t\tbim\n\n\n  \tfoo\tbaz\t\tbim\n\n\n    a\ta\n    b\ta\n\n\n", 4)
	template := "---\nname: Bug report\n---\n\n**What version of the library are you using?**\n\nv1.2.0\n\n" +
		"**What did you do?**\n\nRan the example program against a local server.\n\n**What did you expect to see?**\n\nA greeting.\n\n"
	long := "When an experimental feature is promoted to a stable feature, a migration path will be included in the changelog entry of the release.\n" +
		"There is no guarantee that any environment variable feature flags that enabled the experimental feature will be supported by the stable version.\n" +
		"If they are supported, they may be accompanied with a deprecation notice stating a timeline for the removal of that support.\n"
	pool := "# Connection pool\n\nThe pool hands each caller a connection and takes it back when the caller is done.\n\n" +
		"A change to the pool's behaviour under load once caused a regression that no test caught.\n\n" +
		"Every fix since then comes with a test that reproduces the bug it fixes.\n\n" +
		"Careful inspection of the code found the rest of the stale connections.\n\n"
	poolEnd := "When you write a pool fix, add a regression test that fails without your change. The pool's behaviour is too easy to verify by inspection only.\n"
	runCases(t, []mergeCase{
		// The last paragraph goes on with the document's subject, in its
		// words (go-redis's pool spec): a model's remark speaks of the
		// answer.
		{"a closing paragraph about the document's subject", "markdown", []string{pool[:50], pool[50:] + poolEnd}, pool + poolEnd, ""},
		{"a remark that names the subject in passing", "markdown", []string{pool[:50], pool[50:] + "Let me know if you need more examples of the pool's behaviour.\n"}, strings.TrimSuffix(pool, "\n"), ""},
		{"a licence line that sends the reader to a file", "markdown", []string{readme[:40], readme[40:] + "BSD licensed. See the included LICENSE file for details.\n"}, readme + "BSD licensed. See the included LICENSE file for details.\n", ""},
		{"a line that names a file", "markdown", []string{readme[:40], readme[40:] + "Please see CONTRIBUTING.md for general contribution guidelines.\n"}, readme + "Please see CONTRIBUTING.md for general contribution guidelines.\n", ""},
		{"a paragraph longer than a closing remark", "markdown", []string{readme[:40], readme[40:] + long}, readme + long, ""},
		{"a sentence that names things of the document's", "markdown", []string{"# mathext\n\nPackage mathext implements basic elementary functions not included in the Go standard library.\n"}, "# mathext\n\nPackage mathext implements basic elementary functions not included in the Go standard library.\n", ""},
		{"an emphasised label over its text", "markdown", []string{template[:60], template[60:] + "**Screenshots**\nIf applicable, add screenshots to help explain your problem.\n"}, template + "**Screenshots**\nIf applicable, add screenshots to help explain your problem.\n", ""},
		{"a question framed as the document frames its questions", "markdown", []string{template[:60], template[60:] + "**What did you see instead?**\n"}, template + "**What did you see instead?**\n", ""},
		{"a remark that talks more than any paragraph of the document", "markdown", []string{spec[:len(spec)-30], spec[len(spec)-30:] + "\nI believe nothing was skipped this time.\n"}, spec, ""},
	})
}

// TestDocumentEndingsByShape: a document's last paragraph that its shape
// says is its own stays, whatever its words: the only text under the
// document's last heading (where the document leaves no section empty),
// a paragraph in lower case going on with the document's sentence, a
// question framed as the document frames its own, a line right under the
// document's code block. Each is a real document's ending (CHANGES.md,
// README.md, an issue template) that the merge took for a model's
// closing remark. Where the document leaves sections empty, a remark
// under its last heading still goes.
func TestDocumentEndingsByShape(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Changes\n\n")
	for _, v := range []string{"0.9.0", "0.8.4", "0.8.3", "0.8.2", "0.8.1", "0.8.0", "0.7.0", "0.6.0", "0.5.0", "0.4.0", "0.3.0", "0.2.3", "0.2.2"} {
		fmt.Fprintf(&b, "## [%s](https://github.com/googleapis/google-cloud-go/compare/compute/metadata/v%s) (2024-07-10)\n\n\n### Bug Fixes\n\n", v, v)
		fmt.Fprintf(&b, "* **compute/metadata:** Switch DNS lookup to an absolute lookup ([119b410](https://github.com/googleapis/google-cloud-go/commit/119b410)), refs [#7165](https://github.com/googleapis/google-cloud-go/issues/7165)\n\n")
	}
	b.WriteString("## [0.1.0] (2022-10-26)\n\nInitial release of metadata being it's own module.\n")
	changes := b.String()
	readme := "# keyring\n\nKeyring provides a common interface to a range of secure credential storage services.\n\n## Contributing\n\n" +
		"Contributions to the keyring package are most welcome from engineers of all backgrounds and skill levels.\n\n" +
		"  * Fork the repo\n  * Ensure your PR passes all current (and new) tests\n  * Ideally verify that [aws-vault](https://github.com/99designs/aws-vault) works with your changes (optional)\n\n" +
		"...and we'll do our best to get your work merged in\n"
	template := "**What version of protobuf and what language are you using?**\nVersion: (e.g., `v1.1.0`, `89a0c16f`, etc)\n\n" +
		"**What did you do?**\nIf possible, provide a recipe for reproducing the error.\n\n**What did you expect to see?**\n\n**What did you see instead?**\n\n" +
		"Make sure you include information that can help us debug (full error message, exception listing, stack trace, logs).\n\n" +
		"**Anything else we should know about your project / environment?**\n"
	e2e := "Build client and server binaries.\n\n```sh\ngo build -o ./binaries/client ../../../../interop/xds/client/\n" +
		"go build -o ./binaries/server ../../../../interop/xds/server/\n```\n\nRun the test\n\n```sh\ngo test . -v\n```\n\n" +
		"The client/server paths are flags\n\n```sh\ngo test . -v -client=$HOME/grpc-java/interop-testing/build/install/grpc-interop-testing/bin/xds-test-client\n```\n" +
		"Note that grpc logs are only turned on for Go.\n"
	examples := "# foo\n\n\n## foo\n\n\n### foo\n\n\n#### foo\n\n\n##### foo\n\n\n###### foo\n\n\n# foo#\n"
	at := func(doc, from string) int { return strings.Index(doc, from) }
	runCases(t, []mergeCase{
		{"the only text under the last heading", "markdown", []string{changes[:at(changes, "## [0.2.2]")-300], changes[at(changes, "## [0.2.2]")-300:]}, changes, ""},
		{"a paragraph in lower case", "markdown", []string{readme[:at(readme, "ks with your")], readme[at(readme, "ks with your"):]}, readme, ""},
		{"a question framed as the document's", "markdown", []string{template[:at(template, "ack trace")], template[at(template, "ack trace"):]}, template, ""},
		// A single-chunk answer's document is all of its text before the
		// paragraph: it asks questions of its own.
		{"a question in a single-chunk answer that asks questions", "markdown", []string{template}, template, ""},
		{"a line right under the document's code block", "markdown", []string{e2e[:at(e2e, "-client\n")], e2e[at(e2e, "-client\n"):]}, e2e, ""},
		{"a remark under the last heading of a document of empty sections", "markdown", []string{examples[:30], examples[30:] + "\nPlease review it before using it in production.\n"}, examples, ""},
	})
}

// TestMarkCutInTwo: a cut between the two stars of a strong emphasis
// ("*" + "*please report it privately**") leaves a first line that no
// remark is: with the cut line it closes the span it opens.
func TestMarkCutInTwo(t *testing.T) {
	doc := "# Security Policy\n\nThis policy outlines the commitment and practices of the go-openapi maintainers regarding security.\n\n" +
		"## Vulnerability checks in place\n\nThis repository uses automated vulnerability scans, at every merged commit and at least once a week.\n\n" +
		"Reports are centralized in github security reports and visible only to the maintainers.\n\n## Reporting a vulnerability\n\n" +
		"If you become aware of a security vulnerability that affects the current repository,\n" +
		"**please report it privately to the maintainers**\nrather than opening a publicly visible GitHub issue.\n\n" +
		"Please follow the instructions provided by github to [Privately report a security vulnerability][github-guidance-url].\n\n" +
		"> [!NOTE]\n> On Github, navigate to the project's \"Security\" tab then click on \"Report a vulnerability\".\n\n" +
		"[codeql-url]: https://github.com/github/codeql\n[github-guidance-url]: https://docs.github.com/en/code-security/security-advisories\n"
	k, l := strings.Index(doc, "*please"), strings.Index(doc, "[github-guidance-url]:")+11
	runCases(t, []mergeCase{{"strong emphasis cut between its stars", "markdown", []string{doc[:k], doc[k:l], doc[l:]}, doc, ""}})
}

func TestMarkdownHeading(t *testing.T) {
	cases := []struct {
		above, line string
		want        int
	}{
		{"", "## Usage", 2},
		{"", "# foo#", 1},
		{"", "#", 1},
		{"", "####### seven", 0},
		{"", "#hashtag", 0},
		{"", "    # indented code", 0},
		{"Library", "=======", 1},
		{"Title", "---", 2},
		{"", "----", 0},      // a thematic break after a blank line
		{"- item", "---", 0}, // a thematic break after a list item
		{"Title", "-- -", 0}, // no underline
		{"text", "plain", 0},
	}
	for _, tc := range cases {
		if got := markdownHeading(tc.above, tc.line); got != tc.want {
			t.Errorf("markdownHeading(%q, %q) = %d, want %d", tc.above, tc.line, got, tc.want)
		}
	}
}

// TestClosingRemarksInOtherWords: closing remarks in wordings the
// benchmark's phrasings do not hold, after a README (written as a check on
// the trailer judge's words, not taken from either half): that the answer
// is complete ("been provided", "the last of it", "nothing was skipped"),
// offers to the reader ("any other questions", "if that's easier").
func TestClosingRemarksInOtherWords(t *testing.T) {
	readme := "# Widgets\n\nWidgets is a small library for drawing widgets on a terminal.\nIt has no dependencies and works on every platform Go supports.\n\n" +
		"## Install\n\nRun the usual command to install it into your module,\nthen import the package where you need it.\n"
	var cases []mergeCase
	for _, remark := range []string{
		"All sections have now been provided.",
		"That's the last of it!",
		"Nothing was skipped or summarized.",
		"Any other questions?",
		"I can split it into smaller parts if that's easier.",
		"The remaining content has been appended.",
	} {
		cases = append(cases, mergeCase{remark, "markdown", []string{readme[:60], readme[60:] + "\n" + remark + "\n"}, readme, ""})
	}
	runCases(t, cases)
}

// TestNextListItemAfterPreamble: a preamble, one line break, and the next
// number of the document's ordered list: the item starts a line of its
// own (go-redis's maintnotifications README); after a cut line of
// indentation alone, the item is that line's rest.
func TestNextListItemAfterPreamble(t *testing.T) {
	doc := "## How It Works\n\n1. Redis sends push notifications about cluster maintenance operations\n2. Client creates new connections to updated endpoints\n" +
		"3. Active operations transfer to new connections\n4. Old connections close gracefully\n\n\n## For more information, see the features\n"
	k := strings.Index(doc, "\n4. Old")
	nested := "1. a\n\n  2. b\n\n    3. c\n\n\n- a\n- b\n"
	j := strings.Index(nested, "3. c")
	runCases(t, []mergeCase{
		{"the next item after a preamble", "markdown", []string{doc[:k], "Here is the remainder.\n" + doc[k:]}, doc, ""},
		{"an item after a cut line of indentation", "markdown", []string{nested[:j], "Let me finish the article for you:\n\n" + nested[j:]}, nested, ""},
	})
}

// TestBlockStructureAfterPreamble: the line breaks after a preamble, where
// Markdown's blocks say how many blank lines stand between the document's
// last line and the text's first: one between a list and a paragraph that
// is not its item's (testify's SECURITY.md), one after a heading; none
// where the cut line opens a code block whose first line reads like a
// heading (go-openapi's testing rules).
func TestBlockStructureAfterPreamble(t *testing.T) {
	security := "# Security Policy\n\nThis policy outlines the commitment and practices of the go-openapi maintainers regarding security.\n\n" +
		"## Vulnerability checks in place\n\nThis repository uses automated vulnerability scans, at every merged commit and at least once a week.\n\nWe use:\n\n" +
		"* [`GitHub CodeQL`][codeql-url]\n* [`trivy`][trivy-url]\n* [`govulncheck`][govulncheck-url]\n\n" +
		"Reports are centralized in github security reports and visible only to the maintainers.\n"
	heading := "# Security Policy\n\n## Supported Versions\n\nOnly the latest release is supported.\n\n## Reporting a Vulnerability\n\n" +
		"The maintainers take security seriously. If you discover a vulnerability, please report it privately.\n"
	testing := "## Running tests\n\n**Single module repos:**\n\n```sh\ngo test ./...\n```\n\n**Mono-repos (with `go.work`):**\n\n```sh\n" +
		"# All modules\ngo test work ./...\n\n# Single module\ngo test ./conv/...\n```\n"
	runCases(t, []mergeCase{
		remarkCase(t, "a paragraph after a list", "markdown", security, "\n\nReports", "*— continued —*\n"),
		remarkCase(t, "text after a heading", "markdown", heading, "\nThe maintainers", "Here's the rest.\n"),
		remarkCase(t, "code after the fence line that opens it", "markdown", testing, "\n# All modules", "Sure. Here's the continuation.\n\n"),
	})
}

// A document cut right at the end of a line, the continuation opening with
// a remark and then the document's own line break: where the cut line is a
// whole fence line, or prose ended by a comma or a bracket, the text after
// it starts a line.
func TestCutLineEndsAfterPreamble(t *testing.T) {
	install := "## Install\n\n```sh\ngo install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@latest\n```\n\nThen run it.\n"
	run := "Build the example:\n\n```\ngo run main.go\n```\n"
	json := "The response:\n\n```json\n{\"ok\": true}\n```\n"
	titled := "Save it as:\n\n~~~ python title=main.py\nprint(\"hi\")\n~~~\n"
	closing := "Check you have the latest version. Run\n```\ngo get -u golang.org/x/lint/golint\n```\nIf you still have problems, consider filing an issue.\n"
	cla := "Contributions to this project must be accompanied by a Contributor License\nAgreement. You (or your employer) retain the copyright to your contribution,\nthis simply gives us permission to use and redistribute your contributions as\npart of the project.\n"
	txtar := "Each text file is a txtar archive (see <https://pkg.go.dev/golang.org/x/tools/txtar>\nor `go doc txtar`).\n\nThe comment at the top of the archive is a JSON object.\n"
	comment := "// Some of the effects of this to keep in mind:\n//\n//  - For files without //line directives there is no impact.\npackage ir\n"
	gh := "Install it:\n\n```go\nimport \"github.com/google/go-github/github\" // with go modules disabled\n```\n\nConstruct a new GitHub client.\n"
	escaped := "Backslashes in a fenced block stay:\n\n~~~\n\\[\\]\n~~~\n"
	wrapped := "* If source pointer is nil, then destination pointer is set to nil (instead of\n  allocated zero value)\n* Slices are merged.\n"
	runCases(t, []mergeCase{
		remarkCase(t, "the fence line that closes a block after code", "markdown", gh, "\n```\n\nConstruct", "Continuing from where I left off.\n"),
		remarkCase(t, "a code line that opens with a mark after a fence line", "markdown", escaped, "\n\\[", "Here's the rest.\n"),
		remarkCase(t, "a list item's indented line after a word", "markdown", wrapped, "\n  allocated", "Let me continue.\n"),
		remarkCase(t, "a comment line after a colon", "code", comment, "\n//\n", "Continuing from where I left off...\n"),
		remarkCase(t, "code after the fence line that opens a block", "markdown", install, "\ngo install", "Continuing from where I left off.\n"),
		remarkCase(t, "a command after a bare fence line", "markdown", run, "\ngo run", "Here's the rest.\n"),
		remarkCase(t, "an info string's word goes on", "markdown", json, "json\n", "Here's the rest:\n\n"),
		remarkCase(t, "an info string of words goes on", "markdown", titled, "n.py", "Here's the rest:\n\n"),
		remarkCase(t, "an info string after its space goes on", "markdown", titled, "python", "Here's the rest:\n\n"),
		remarkCase(t, "text after the fence line that closes a block", "markdown", closing, "\nIf you still", "Continuing.\n"),
		remarkCase(t, "prose after a comma", "markdown", cla, "\nthis simply", "Picking up where I stopped.\n"),
		remarkCase(t, "prose after a bracket", "markdown", txtar, "\nor `go doc", "Let me continue.\n"),
	})
}

// A document cut inside a line, the continuation opening with a remark and
// a blank line: text that closes a span the cut line opened, or goes on
// with a URL or a path, goes on with the cut line.
func TestCutLineGoesOnAfterPreamble(t *testing.T) {
	span := "## Readahead\n\nThe readahead object also fulfills the [`io.WriterTo`](https://golang.org/pkg/io/#WriterTo) interface, which is likely to speed up `io.Copy`.\n"
	bold := "We reserve the right to make breaking changes for the following\nreasons:\n\n*   **Security:** A security issue in the specification may\n    come to light.\n"
	url := "You may obtain a copy of the License at\n\n  http://www.apache.org/licenses/LICENSE-2.0\n\nUnless required by applicable law.\n"
	path := "It is the companion tool for [`protoc-gen-openapiv3`](../protoc-gen-openapiv3/),\nwhich emits one document per proto file.\n"
	runCases(t, []mergeCase{
		remarkCase(t, "a code span's close", "markdown", span, "WriterTo`]", "Continuing from where I left off.\n\n"),
		remarkCase(t, "a strong emphasis's close", "markdown", bold, "** A security", "Here's the rest.\n\n"),
		remarkCase(t, "a URL after its scheme", "markdown", url, "//www", "Let me continue.\n\n"),
		remarkCase(t, "a relative path after its dots", "markdown", path, "/protoc-gen-openapiv3/)", "Picking up where I stopped.\n\n"),
	})
}

// A paragraph cut at the end of one of its lines, the continuation opening
// with a remark and a blank line: a lower-case word after a line that ends
// without a sentence's end goes on in the same paragraph; so does a line of
// code after one that opens a bracket ("func main() {"), its first item.
func TestParagraphGoesOnAfterPreamble(t *testing.T) {
	para := "## Timestamps\n\nFields of type Timestamp become time.Time in the generated code.\n\nDurations become time.Duration the same way.\n\n" +
		"Both need the gogoproto extension in the file's options.\n\nThe plugin rewrites each field with the `stdtime` extension, then an import of the time package\n" +
		"is added even if it is not needed.\n\nRemove it by hand when the build complains.\n"
	code := "#### Using term\n\n```go\npackage main\n\nimport \"os\"\n\nvar fd = os.Stdin.Fd()\n\nvar name = \"term\"\n\nfunc main() {\n\tprintln(name, fd)\n}\n```\n"
	runCases(t, []mergeCase{
		remarkCase(t, "code after an opening bracket", "markdown", code, "\n\tprintln", "Continuing from where I left off.\n\n"),
		remarkCase(t, "cut at the line's end", "markdown", para, "\nis added", "Continuing from where I left off.\n\n"),
		remarkCase(t, "cut after the line break", "markdown", para, "is added", "Here's the rest.\n\n"),
	})
}

// remarkCase cuts doc right before the first place it writes at and
// continues it with a model's remark (its line break or blank line
// included) before the rest.
func remarkCase(t *testing.T, name, format, doc, at, remark string) mergeCase {
	t.Helper()
	i := strings.Index(doc, at)
	if i < 0 {
		t.Fatalf("%s: %q is not in the document", name, at)
	}
	return mergeCase{name, format, []string{doc[:i], remark + doc[i:]}, doc, ""}
}

// TestJunctionsAfterTheCut: the line breaks after a preamble, weighed by
// how the document joins the same bytes, count the text after the cut as
// the document's too: a specification's examples write "Foo" + "bar" on
// consecutive lines twice after the cut, apart once before it.
func TestJunctionsAfterTheCut(t *testing.T) {
	examples := "Foo\n\nbar\n---\nbaz\n\n\nFoo\nbar\n\n---\n\nbaz\n\n\nFoo\nbar\n* * *\nbaz\n\n\nFoo\nbar\n\\---\nbaz\n"
	runCases(t, []mergeCase{
		remarkCase(t, "a paragraph's next line", "markdown", examples, "bar\n\n---", "Let me finish the guide for you:\n\n"),
	})
}
