// Package cmdline holds what carryover's commands (worker, enqueue) share in
// reading a command line: a usage error, which exits 2 with the usage on
// stderr before anything touches a service, the exit code of an error, and
// the subcommand a typo was probably meant to be. A typo that does real
// work (starts a worker, queues a paid job) costs more than a refusal.
package cmdline

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// ExitUsage is the exit code of a command line refused as written, as the
// flag package and most Unix tools use it.
const ExitUsage = 2

// UsageError refuses a command line: an unknown subcommand, a stray
// argument, a required flag left out.
type UsageError struct {
	Msg string
	// shown: the flag package already printed the message and the usage.
	shown bool
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef makes a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Parse parses fs (which must be flag.ContinueOnError) and refuses what
// it cannot parse as a usage error; -h and -help return flag.ErrHelp after
// fs.Usage ran.
func Parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &UsageError{Msg: err.Error(), shown: true}
}

// NoArgs refuses the arguments left after a subcommand's flags, for one
// that takes none.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		// "worker migrate" → "migrate": Exit prefixes the command's name.
		_, sub, _ := strings.Cut(fs.Name(), " ")
		return Usagef("%s takes no arguments, got %q", cmp.Or(sub, fs.Name()), fs.Args())
	}
	return nil
}

// Exit prints err as command name reports it and returns the process's
// exit code: 0 for no error and for -h (the usage was printed), 2 for a
// usage error (its message, then usage), 1 for any other error.
func Exit(name string, err error, stderr io.Writer, usage func(io.Writer)) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		if !ue.shown {
			fmt.Fprintf(stderr, "%s: %s\n", name, ue.Msg)
			usage(stderr)
		}
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}

// Unknown refuses word as a subcommand of name, suggesting the closest of
// names when one is a likely typo of it.
func Unknown(name, word string, names []string) error {
	if s := Closest(word, names); s != "" {
		return Usagef("unknown %s subcommand %q (did you mean %q?)", name, word, s)
	}
	return Usagef("unknown %s subcommand %q", name, word)
}

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
