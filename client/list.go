package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/carryover/carryover/internal/store"
)

// Page sizes of List.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ListOptions select a page of a tenant's jobs.
type ListOptions struct {
	// Tenant whose jobs are listed; required.
	Tenant string
	// Status keeps only jobs in one of these statuses; none keeps all.
	Status []string
	// Limit is the page's size, 1 to MaxListLimit; 0 is DefaultListLimit.
	Limit int
	// Cursor continues a listing: the NextCursor of its previous page.
	Cursor string
}

// JobSummary is a job of a listing: its state without per-chunk figures
// (Status has those).
type JobSummary struct {
	ID         string          `json:"id"`
	Tenant     string          `json:"tenant"`
	Status     string          `json:"status"`
	Model      string          `json:"model"`
	Format     string          `json:"format"`
	Chunks     int             `json:"chunks"`
	StopReason string          `json:"stop_reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
}

// JobPage is a page of a listing, newest job first. NextCursor continues
// it; it is empty on the last page.
type JobPage struct {
	Jobs       []JobSummary `json:"jobs"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// List returns a page of a tenant's jobs, newest first. A listing is stable
// under jobs created meanwhile: a cursor marks a place in the order
// (creation time, then id), not an offset. A *ValidationError names a bad
// status, limit or cursor.
func (c *Client) List(ctx context.Context, o ListOptions) (JobPage, error) {
	q, err := listQuery(o)
	if err != nil {
		return JobPage{}, err
	}
	rows, err := c.store.ListJobs(ctx, q)
	if err != nil {
		return JobPage{}, err
	}
	page := JobPage{Jobs: make([]JobSummary, 0, len(rows))}
	if len(rows) > q.Limit-1 { // one more than asked for: there is a next page
		rows = rows[:q.Limit-1]
		last := rows[len(rows)-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ID)
	}
	for _, j := range rows {
		page.Jobs = append(page.Jobs, JobSummary{ID: j.ID, Tenant: j.TenantID, Status: j.Status, Model: j.Model, Format: j.Format,
			Chunks: j.Chunks, StopReason: str(j.StopReason), Error: str(j.Error), Metadata: j.Metadata,
			CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, FinishedAt: j.FinishedAt})
	}
	return page, nil
}

// listQuery checks o, naming every bad field, and turns it into the store's
// query (its Limit one more than the page's, to learn whether more follow).
func listQuery(o ListOptions) (store.ListQuery, error) {
	var bad []FieldError
	q := store.ListQuery{Tenant: o.Tenant, Limit: o.Limit}
	if o.Tenant == "" {
		bad = append(bad, FieldError{Field: "tenant", Message: "is required"})
	}
	for _, s := range o.Status {
		if !slices.Contains(store.Statuses(), s) {
			bad = append(bad, FieldError{Field: "status", Message: fmt.Sprintf("%q is not a job status (one of %s)", s, strings.Join(store.Statuses(), ", "))})
		} else if !slices.Contains(q.Statuses, s) {
			q.Statuses = append(q.Statuses, s)
		}
	}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		bad = append(bad, FieldError{Field: "limit", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxListLimit, o.Limit)})
	}
	q.Limit++
	if o.Cursor != "" {
		var ok bool
		if q.AfterCreated, q.AfterID, ok = decodeCursor(o.Cursor); !ok {
			bad = append(bad, FieldError{Field: "cursor", Message: "is not a cursor this API handed out (pass next_cursor of the previous page as it is)"})
		}
	}
	if len(bad) > 0 {
		return store.ListQuery{}, &ValidationError{Fields: bad}
	}
	return q, nil
}

// A cursor is opaque to callers: "<created_at in µs since the epoch>.<id>",
// base64url-encoded.
func encodeCursor(created time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(created.UnixMicro(), 10) + "." + id))
}

func decodeCursor(cursor string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return time.Time{}, "", false
	}
	micros, id, ok := strings.Cut(string(b), ".")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || us <= 0 {
		return time.Time{}, "", false
	}
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return time.Time{}, "", false
	}
	return time.UnixMicro(us), id, true
}
