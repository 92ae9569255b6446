// Package suggest finds the name a mistyped word most likely meant, for the
// "did you mean" of the command line's subcommands and of a request's
// unknown fields alike.
package suggest

// Closest returns the name within two edits (insertions, deletions,
// substitutions, swaps of neighbours) of word, the nearest first, or "".
func Closest(word string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(word, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b: the
// Levenshtein distance with a swap of two neighbours counted as one edit
// ("statsu" is one from "status").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
