package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Text makes s storable in a Postgres text column, which holds neither NUL
// nor invalid UTF-8: each becomes U+FFFD. The record of a failure must not
// fail for what a model endpoint put in an error message: a failure that
// cannot be recorded is a delivery that dies without a trace, and calls the
// model again. (Chunk text is scrubbed before it is judged, and counted:
// continuation.Response.Scrub.)
func Text(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// IsDataError reports whether err is Postgres refusing the data itself — a
// value out of range, a character it cannot hold, a constraint violated
// (SQLSTATE classes 22 and 23) — which the same write would meet again on
// every retry, as opposed to a connection or server failure that a retry
// may not.
func IsDataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23"))
}
