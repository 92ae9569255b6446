package main

import (
	"fmt"
	"sort"
	"strings"
)

// cell counts the cases of one (format, habit) of a half: how many, how
// many the merge gave back exactly, how many a plain concatenation did.
type cell struct {
	n, merged, concat int
}

func (c *cell) addCell(o cell) {
	c.n += o.n
	c.merged += o.merged
	c.concat += o.concat
}

func (c cell) share() float64 { return float64(c.merged) / float64(max(c.n, 1)) }

// table is the result of one half.
type table struct {
	cells map[[2]string]*cell
}

func newTable() *table { return &table{cells: map[[2]string]*cell{}} }

func (t *table) add(format, habit string, merged, concat bool) {
	k := [2]string{format, habit}
	c := t.cells[k]
	if c == nil {
		c = &cell{}
		t.cells[k] = c
	}
	c.n++
	if merged {
		c.merged++
	}
	if concat {
		c.concat++
	}
}

func (t *table) total() cell {
	var tot cell
	for _, c := range t.cells {
		tot.addCell(*c)
	}
	return tot
}

func row(name, habit string, c cell) {
	fmt.Printf("%-9s %-20s %6d %8.1f%% %8.1f%%\n", name, habit, c.n, 100*c.share(), 100*float64(c.concat)/float64(max(c.n, 1)))
}

// print writes the table by format and habit, the overall line, the lowest
// cell, then the summary by habit over all formats with the rows.
func (t *table) print() {
	order := map[string]int{}
	for i, h := range habits() {
		order[h.name] = i
	}
	var keys [][2]string
	for k := range t.cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return order[keys[i][1]] < order[keys[j][1]]
	})
	fmt.Printf("%-9s %-20s %6s %9s %9s\n", "format", "behavior", "cases", "merge", "concat")
	worst, worstKey := 2.0, ""
	for _, k := range keys {
		c := *t.cells[k]
		if c.share() < worst {
			worst, worstKey = c.share(), k[0]+"/"+k[1]
		}
		row(k[0], k[1], c)
	}
	row("overall", "", t.total())
	fmt.Printf("lowest cell: %s %.1f%%\n", worstKey, 100*worst)
	t.printSummary(order)
}

// printSummary writes every habit over all formats, then the groups the
// issue's targets name.
func (t *table) printSummary(order map[string]int) {
	by := map[string]*cell{}
	for k, c := range t.cells {
		if by[k[1]] == nil {
			by[k[1]] = &cell{}
		}
		by[k[1]].addCell(*c)
	}
	var names []string
	for n := range by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return order[names[i]] < order[names[j]] })
	fmt.Printf("\n%-30s %6s %9s %9s\n", "habit (all formats)", "cases", "merge", "concat")
	line := func(name string, c cell, members string) {
		fmt.Printf("%-30s %6d %8.1f%% %8.1f%%%s\n", name, c.n, 100*c.share(), 100*float64(c.concat)/float64(max(c.n, 1)), members)
	}
	for _, n := range names {
		line(n, *by[n], "")
	}
	fmt.Println()
	for _, g := range habitGroups {
		var c cell
		for _, m := range g.members {
			if by[m] != nil {
				c.addCell(*by[m])
			}
		}
		line(g.name, c, "   ("+strings.Join(g.members, " + ")+")")
	}
}

// formatCounts is "csv=8 json=25 ..." for a list of documents.
func formatCounts(docs []doc) string {
	n := map[string]int{}
	for _, d := range docs {
		n[d.format]++
	}
	var fs []string
	for f, k := range n {
		fs = append(fs, fmt.Sprintf("%s=%d", f, k))
	}
	sort.Strings(fs)
	return strings.Join(fs, " ")
}
