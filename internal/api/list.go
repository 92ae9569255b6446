package api

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/carryover/carryover/client"
)

// ListedJob is a job of GET /v1/jobs: its summary and links.
type ListedJob struct {
	client.JobSummary
	Links Links `json:"links"`
}

// JobList is the answer to GET /v1/jobs: a page of the tenant's jobs,
// newest first; next_cursor and links.next continue it.
type JobList struct {
	Jobs       []ListedJob `json:"jobs"`
	NextCursor string      `json:"next_cursor,omitempty"`
	Links      struct {
		Next string `json:"next,omitempty"`
	} `json:"links"`
}

// listJobs serves GET /v1/jobs?status=&limit=&cursor= for the caller's
// tenant; status may repeat (status=queued&status=running).
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := client.ListOptions{Tenant: tenantOf(r), Cursor: q.Get("cursor"), Status: q["status"]}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			problem(w, http.StatusBadRequest, "invalid request", "limit must be a whole number",
				client.FieldError{Field: "limit", Message: "must be a whole number between 1 and " + strconv.Itoa(client.MaxListLimit)})
			return
		}
		if o.Limit = n; n == 0 {
			o.Limit = -1 // an explicit 0 is refused, not read as the default
		}
	}
	page, err := s.c.List(r.Context(), o)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := JobList{Jobs: make([]ListedJob, len(page.Jobs)), NextCursor: page.NextCursor}
	for i, j := range page.Jobs {
		out.Jobs[i] = ListedJob{JobSummary: j, Links: links(j.ID)}
	}
	if page.NextCursor != "" {
		next := url.Values{"cursor": {page.NextCursor}}
		if v := q.Get("limit"); v != "" {
			next.Set("limit", v)
		}
		if len(o.Status) > 0 {
			next["status"] = o.Status
		}
		out.Links.Next = "/v1/jobs?" + next.Encode()
	}
	writeJSON(w, http.StatusOK, out)
}
