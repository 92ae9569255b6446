package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/carryover/carryover/internal/api"
	"github.com/carryover/carryover/internal/testenv"
)

// GET /v1/jobs lists the caller's tenant's jobs newest first, page by page
// with an opaque cursor (links.next the same), filtered by status; another
// tenant's jobs never appear; bad parameters are a 400 naming each.
func TestListJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	// A tenant of this test's own, so the listing holds only its jobs.
	tenant := testenv.RandomName("list")
	if _, err := e.st.Pool().Exec(context.Background(), `INSERT INTO tenants (id) VALUES ($1)`, tenant); err != nil {
		t.Fatal(err)
	}
	key, _, err := e.st.CreateAPIKey(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	mine := e
	mine.key = key
	var ids []string // oldest first
	for i := range 7 {
		resp, body := mine.do("POST", "/v1/jobs", fmt.Sprintf(`{"model":"gpt-4.1-mini","input":"job %d"}`, i))
		var acc api.Accepted
		if err := json.Unmarshal(body, &acc); err != nil || resp.StatusCode != 202 || acc.Links.Stream != acc.Links.Self+"/stream" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		ids = append(ids, acc.ID)
	}
	e.job() // tenant alpha's: never listed for this tenant
	for _, id := range ids[:2] {
		if resp, body := mine.do("POST", "/v1/jobs/"+id+"/cancel", ""); resp.StatusCode != 200 {
			t.Fatalf("cancel: %d %s", resp.StatusCode, body)
		}
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	tests := []struct {
		name, query string
		want        []string // every job listed, in order, over all pages
		pages       int
	}{
		{"all, one page", "", newest, 1},
		{"all, pages of 3", "?limit=3", newest, 3},
		{"pages of 1", "?limit=1", newest, 7},
		{"cancelled", "?status=cancelled", []string{ids[1], ids[0]}, 1},
		{"queued, pages of 2", "?status=queued&limit=2", newest[:5], 3},
		{"two statuses", "?status=queued&status=cancelled&limit=4", newest, 2},
		{"succeeded", "?status=succeeded", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			pages := 0
			for next := "/v1/jobs" + tt.query; next != ""; pages++ {
				resp, body := mine.do("GET", next, "")
				var l api.JobList
				if err := json.Unmarshal(body, &l); err != nil || resp.StatusCode != 200 {
					t.Fatalf("GET %s: %d %s", next, resp.StatusCode, body)
				}
				for _, j := range l.Jobs {
					if j.Tenant != tenant || j.Links.Self != "/v1/jobs/"+j.ID {
						t.Fatalf("job %s of tenant %s, links %+v", j.ID, j.Tenant, j.Links)
					}
					got = append(got, j.ID)
				}
				if (l.NextCursor == "") != (l.Links.Next == "") || (l.NextCursor != "" && !strings.Contains(l.Links.Next, url.QueryEscape(l.NextCursor))) {
					t.Fatalf("next_cursor %q, links.next %q", l.NextCursor, l.Links.Next)
				}
				next = l.Links.Next
			}
			if !slices.Equal(got, tt.want) || pages != tt.pages {
				t.Fatalf("listed %v in %d pages, want %v in %d", got, pages, tt.want, tt.pages)
			}
		})
	}
	bad := []struct{ query, field string }{
		{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?limit=x", "limit"}, {"?status=done", "status"},
		{"?cursor=bm9wZQ", "cursor"}, {"?cursor=%21", "cursor"},
	}
	for _, b := range bad {
		resp, body := mine.do("GET", "/v1/jobs"+b.query, "")
		var p api.Problem
		if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != http.StatusBadRequest || len(p.Errors) == 0 || p.Errors[0].Field != b.field {
			t.Errorf("GET /v1/jobs%s: %d %s, want a 400 naming %s", b.query, resp.StatusCode, body, b.field)
		}
	}
	if resp, _ := e.do("GET", "/v1/jobs", "", "Authorization", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: %d", resp.StatusCode)
	}
}

// Every status code a route answers with is in openapi.json: each request
// here provokes one, and conform fails the test for a code the document
// does not list for the operation (the stream, which conform passes
// through, is checked against the document here).
func TestStatusCodesDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	job := e.job()
	unknown := "/v1/jobs/6f1f7c0e-0000-4000-8000-000000000000"
	doc := loadSpec(t)
	tests := []struct {
		method, path, body string
		header             []string
		want               int
	}{
		{"POST", "/v1/jobs", "", nil, 400},
		{"POST", "/v1/jobs", "model=x", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"POST", "/v1/jobs", `{"input":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`, nil, 413},
		{"POST", "/v1/jobs", `{"model":"gpt-4.1-mini","input":"p"}`, []string{"Authorization", ""}, 401},
		{"GET", "/v1/jobs?limit=0", "", nil, 400},
		{"GET", "/v1/jobs/nope", "", nil, 400},
		{"GET", unknown, "", nil, 404},
		{"GET", job + "/result", "", nil, 409},
		{"GET", unknown + "/chunks", "", nil, 404},
		{"GET", job + "/events?after=-1", "", nil, 400},
		{"POST", "/v1/jobs/nope/cancel", "", nil, 400},
		{"POST", job + "/resume", "", nil, 409},
		{"POST", job + "/resume", "x", []string{"Content-Type", "text/plain"}, 415},
		{"POST", job + "/remerge", "", nil, 409},
		{"POST", "/v1/jobs/nope/remerge", "", nil, 400},
		{"GET", job + "/stream?snapshot=all", "", nil, 400},
		{"GET", "/v1/jobs/nope/stream", "", nil, 400},
		{"GET", unknown + "/stream", "", nil, 404},
		{"GET", job + "/stream", "", []string{"Authorization", "Bearer co_wrong"}, 401},
	}
	for _, tt := range tests {
		resp, body := e.do(tt.method, tt.path, tt.body, tt.header...)
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d %.200s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
			continue
		}
		u, _ := url.Parse(tt.path)
		op := doc.Paths.Find(strings.Replace(strings.Replace(u.Path, "/nope", "/{id}", 1), job, "/v1/jobs/{id}", 1))
		if strings.HasPrefix(u.Path, unknown) {
			op = doc.Paths.Find(strings.Replace(u.Path, unknown, "/v1/jobs/{id}", 1))
		}
		if op == nil || op.GetOperation(tt.method) == nil || op.GetOperation(tt.method).Responses.Status(tt.want) == nil {
			t.Errorf("%s %s answered %d, which openapi.json does not list", tt.method, tt.path, tt.want)
		}
	}
}
