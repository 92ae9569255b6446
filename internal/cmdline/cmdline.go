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

	"github.com/carryover/carryover/internal/suggest"
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
	if s := suggest.Closest(word, names); s != "" {
		return Usagef("unknown %s subcommand %q (did you mean %q?)", name, word, s)
	}
	return Usagef("unknown %s subcommand %q", name, word)
}
