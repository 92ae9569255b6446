package store_test

import (
	"strings"
	"testing"

	"github.com/carryover/carryover/internal/store"
)

// Redact must hide a password in every DSN form pgx accepts, since the
// worker logs the DSN at start: URL userinfo, a password query parameter,
// and keyword/value settings, quoted or not.
func TestSecurityRedact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u:s3cret@db:5432/app?sslmode=disable", "postgres://u:xxxxx@db:5432/app?sslmode=disable"},
		{"postgres://u@db/app", "postgres://u@db/app"},
		{"postgres://db/app?user=u&password=s3cret", "postgres://db/app?password=xxxxx&user=u"},
		{"postgres://u:p%zzs3cret@db/app", "postgres://xxxxx@db/app"},
		{"host=db user=u password=s3cret dbname=app", "host=db user=u password=xxxxx dbname=app"},
		{"password=s3cret host=db", "password=xxxxx host=db"},
		{"host=db password = s3cret", "host=db password = xxxxx"},
		{"host=db PASSWORD=s3cret", "host=db PASSWORD=xxxxx"},
		{`host=db password='s3 cret \' more' dbname=app`, "host=db password=xxxxx dbname=app"},
		{`host=db password=s3\ cret dbname=app`, "host=db password=xxxxx dbname=app"},
		{"host=db password='s3cret", "host=db password=xxxxx"},
		{"host=db sslpassword=s3cret sslmode=verify-full", "host=db sslpassword=xxxxx sslmode=verify-full"},
		{"host=db\tpassword=s3cret", "host=db\tpassword=xxxxx"},
		{"host=db user=u dbname=app", "host=db user=u dbname=app"},
	} {
		got := store.Redact(c.dsn)
		if got != c.want || strings.Contains(got, "s3") || strings.Contains(got, "cret") {
			t.Errorf("Redact(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}
