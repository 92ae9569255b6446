package simulator

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Vocabulary deliberately mixes ASCII with accented Latin, Greek, CJK and a
// 4-byte emoji so that token cuts land inside multi-byte runes' neighbourhoods.
var (
	words = []string{
		"ledger", "carry", "over", "token", "budget", "window", "stream", "chunk", "merge",
		"durable", "queue", "worker", "retry", "café", "naïve", "Zürich", "São Paulo",
		"東京", "数据", "継続", "Ελλάδα", "résumé", "façade", "smörgåsbord", "🚀", "ångström",
		"postgres", "offset", "cursor", "latency", "throughput", "idempotent", "replay",
	}
	names  = []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Édith Piaf", "李小龍", "Søren Kierkegaard", "O'Brien, Pat", "Jane \"JJ\" Doe", "Zoë Saldaña", "山田 太郎"}
	cities = []string{"Zürich", "São Paulo", "東京", "Kraków", "Reykjavík", "Montréal", "München", "서울", "New York, NY", "Αθήνα"}
	langs  = []string{"go", "sql", "json", "bash"}
)

func generate(format string, size int, seed int64) string {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed_cafe))
	var b strings.Builder
	b.Grow(size + 512)
	switch format {
	case FormatCSV:
		genCSV(&b, r, size)
	case FormatJSON:
		genJSON(&b, r, size)
	case FormatJSONL:
		genJSONL(&b, r, size)
	case FormatMarkdown:
		genMarkdown(&b, r, size)
	case FormatCode:
		genCode(&b, r, size)
	case FormatDiff:
		genDiff(&b, r, size)
	default:
		genText(&b, r, size)
	}
	s := b.String()
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

func sentence(r *rand.Rand) string {
	n := 5 + r.IntN(10)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = pick(r, words)
	}
	s := strings.Join(ws, " ")
	switch r.IntN(6) {
	case 0:
		s += ", with \"quoted\" words"
	case 1:
		s += " — and a dash; then 42.5% more"
	case 2:
		s += " (see §3, p. 7)"
	}
	return capitalize(s) + "."
}

// capitalize upper-cases the first rune (not byte: the vocabulary is UTF-8).
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func genText(b *strings.Builder, r *rand.Rand, size int) {
	for b.Len() < size {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		n := 2 + r.IntN(4)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(sentence(r))
		}
		b.WriteString("\n")
	}
}

// csvField quotes a field when RFC 4180 requires it.
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func genCSV(b *strings.Builder, r *rand.Rand, size int) {
	b.WriteString("id,name,city,amount,note,updated_at\n")
	for id := 1; b.Len() < size || id == 1; id++ {
		note := ""
		switch r.IntN(5) {
		case 0:
			note = sentence(r)
		case 1:
			note = "multi-line note:\n" + sentence(r) + "\nend"
		case 2:
			note = `she said "hi, there" twice`
		case 3:
			note = pick(r, words) + ", " + pick(r, words)
		}
		updated := ""
		if r.IntN(4) != 0 {
			updated = fmt.Sprintf("2025-%02d-%02dT%02d:%02d:00Z", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60))
		}
		fmt.Fprintf(b, "%d,%s,%s,%d.%02d,%s,%s\n", id, csvField(pick(r, names)), csvField(pick(r, cities)),
			r.IntN(100000)-5000, r.IntN(100), csvField(note), updated)
	}
}

// jsonString encodes s as a JSON string literal, leaving non-ASCII unescaped
// the way models write it.
func jsonString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteRune(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// record is one generated item shared by the json and jsonl formats.
type record struct {
	id     int
	name   string
	city   string
	score  float64
	active bool
	tags   []string
	note   string
}

func newRecord(r *rand.Rand, id int) record {
	rec := record{id: id, name: pick(r, names), city: pick(r, cities), score: float64(r.IntN(100000)) / 100, active: r.IntN(2) == 0}
	for i := 0; i < 1+r.IntN(3); i++ {
		rec.tags = append(rec.tags, pick(r, words))
	}
	switch r.IntN(4) {
	case 0:
		rec.note = "path C:\\tmp\\out.csv\tand a tab"
	case 1:
		rec.note = "line one\nline two with {braces} and [brackets]"
	case 2:
		rec.note = sentence(r)
	default:
		rec.note = `quote " inside, and "}" too`
	}
	return rec
}

func (rec record) tagList() string {
	q := make([]string, len(rec.tags))
	for i, t := range rec.tags {
		q[i] = jsonString(t)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func genJSON(b *strings.Builder, r *rand.Rand, size int) {
	b.WriteString("{\n  \"items\": [\n")
	for id := 1; ; id++ {
		rec := newRecord(r, id)
		fmt.Fprintf(b, "    {\n      \"id\": %d,\n      \"name\": %s,\n      \"active\": %t,\n      \"score\": %.2f,\n", rec.id, jsonString(rec.name), rec.active, rec.score)
		fmt.Fprintf(b, "      \"address\": {\n        \"city\": %s,\n        \"geo\": {\"lat\": %.4f, \"lon\": %.4f}\n      },\n", jsonString(rec.city), r.Float64()*180-90, r.Float64()*360-180)
		fmt.Fprintf(b, "      \"tags\": %s,\n      \"note\": %s\n    }", rec.tagList(), jsonString(rec.note))
		if b.Len()+8 >= size {
			break
		}
		b.WriteString(",\n")
	}
	b.WriteString("\n  ]\n}\n")
}

func genJSONL(b *strings.Builder, r *rand.Rand, size int) {
	for id := 1; b.Len() < size || id == 1; id++ {
		rec := newRecord(r, id)
		fmt.Fprintf(b, `{"id": %d, "name": %s, "city": %s, "score": %.2f, "active": %t, "tags": %s, "meta": {"note": %s, "rank": %d}}`+"\n",
			rec.id, jsonString(rec.name), jsonString(rec.city), rec.score, rec.active, rec.tagList(), jsonString(rec.note), r.IntN(10))
	}
}

func genMarkdown(b *strings.Builder, r *rand.Rand, size int) {
	b.WriteString("# Carryover report\n\n" + sentence(r) + "\n")
	for sec := 1; b.Len() < size; sec++ {
		if sec%3 == 0 {
			b.WriteString("\n## Notes\n\n- " + sentence(r) + "\n- " + sentence(r) + "\n")
			continue
		}
		fmt.Fprintf(b, "\n## Section %d: %s\n\n%s %s\n\n", sec, pick(r, words), sentence(r), sentence(r))
		switch sec % 4 {
		case 1:
			for i := 1; i <= 3; i++ {
				fmt.Fprintf(b, "%d. **%s** — %s\n", i, pick(r, words), sentence(r))
			}
		case 2:
			b.WriteString("| name | city | score |\n| --- | --- | ---: |\n")
			for i := 0; i < 3; i++ {
				fmt.Fprintf(b, "| %s | %s | %d |\n", strings.ReplaceAll(pick(r, names), "|", `\|`), pick(r, cities), r.IntN(1000))
			}
		default:
			lang := pick(r, langs)
			fmt.Fprintf(b, "```%s\n", lang)
			switch lang {
			case "go":
				fmt.Fprintf(b, "func f%d() string { return %s }\n", sec, jsonString(pick(r, words)))
			case "sql":
				fmt.Fprintf(b, "SELECT id, name FROM jobs WHERE city = '%s';\n", pick(r, cities))
			case "json":
				fmt.Fprintf(b, "{\"section\": %d, \"word\": %s}\n", sec, jsonString(pick(r, words)))
			default:
				fmt.Fprintf(b, "echo \"## not a heading %d\"\n", sec)
			}
			b.WriteString("```\n")
		}
	}
}

func genCode(b *strings.Builder, r *rand.Rand, size int) {
	b.WriteString("// Package gen is generated sample code.\npackage gen\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n")
	for i := 1; b.Len() < size; i++ {
		w := pick(r, words)
		switch i % 3 {
		case 0:
			fmt.Fprintf(b, "\n// Item%d holds one %s.\ntype Item%d struct {\n\tName  string `json:\"name\"`\n\tCount int    `json:\"count,omitempty\"`\n}\n", i, w, i)
		case 1:
			fmt.Fprintf(b, "\n// Describe%d says what %s means.\nfunc Describe%d(n int) string {\n\tif n > %d {\n\t\treturn fmt.Sprintf(\"%%d × %%s\", n, %s)\n\t}\n\treturn strings.Repeat(%s, n) // {not a block}\n}\n",
				i, w, i, r.IntN(100), jsonString(w), jsonString("\"}"))
		default:
			fmt.Fprintf(b, "\nvar table%d = map[string]int{\n", i)
			for j := 0; j < 3; j++ {
				fmt.Fprintf(b, "\t%s: %d,\n", jsonString(fmt.Sprintf("%s-%d", pick(r, words), j)), r.IntN(1000))
			}
			b.WriteString("}\n")
		}
	}
}

func genDiff(b *strings.Builder, r *rand.Rand, size int) {
	for f := 1; b.Len() < size || f == 1; f++ {
		name := fmt.Sprintf("internal/%s/file%d.go", pick(r, []string{"merge", "store", "jobs", "queue"}), f)
		fmt.Fprintf(b, "diff --git a/%s b/%s\nindex %07x..%07x 100644\n--- a/%s\n+++ b/%s\n", name, name, r.Uint32()>>4, r.Uint32()>>4, name, name)
		line := 1 + r.IntN(50)
		for h := 0; h < 1+r.IntN(3); h++ {
			ctx := []string{fmt.Sprintf("\t// %s", sentence(r)), "\treturn nil", "}"}
			minus := fmt.Sprintf("\tx := %s", jsonString(pick(r, words)))
			plus := []string{fmt.Sprintf("\tx := %s", jsonString(pick(r, words))), fmt.Sprintf("\ty := %d // ± %s", r.IntN(100), pick(r, words))}
			fmt.Fprintf(b, "@@ -%d,%d +%d,%d @@ func f%d() error {\n", line, len(ctx)+1, line, len(ctx)+len(plus), h)
			fmt.Fprintf(b, " %s\n-%s\n+%s\n+%s\n %s\n %s\n", ctx[0], minus, plus[0], plus[1], ctx[1], ctx[2])
			line += 10 + r.IntN(40)
		}
	}
}
