// Package migrations holds the SQL schema, embedded so the worker binary can
// apply it with golang-migrate without any files on disk.
package migrations

import "embed"

// FS holds the numbered up/down migration files.
//
//go:embed *.sql
var FS embed.FS
