package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/carryover/carryover/internal/api"
)

// specRouter loads the checked-in OpenAPI document and checks it is valid.
func specRouter(t *testing.T) routers.Router {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3 document: %v", err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// conform wraps the API so that every response is validated against
// openapi.json — a route, status, header or body the document does not
// describe fails the test — and so is every request the API accepted (a
// 2xx answer): a field the server takes but the document lacks fails too.
// The event stream is passed through (it does not end); its framing is
// checked by TestStream.
func conform(t *testing.T, next http.Handler) http.Handler {
	router := specRouter(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stream") {
			next.ServeHTTP(w, r)
			return
		}
		route, params, err := router.FindRoute(r)
		if err != nil {
			// A route the document lacks is answered only with a problem
			// document: 404, or 405 for a method a known path does not have.
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			if (rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed) ||
				rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s %s is not in openapi.json, yet answered %d", r.Method, r.URL.Path, rec.Code)
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		reqBody, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code < 300 {
			accepted := r.Clone(r.Context())
			accepted.Body = io.NopCloser(bytes.NewReader(reqBody))
			if err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{Request: accepted,
				PathParams: params, Route: route, Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}); err != nil {
				t.Errorf("%s %s was accepted (%d) but openapi.json does not describe the request: %v\n%.500s", r.Method, r.URL.Path, rec.Code, err, reqBody)
			}
		}
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
				Options: &openapi3filter.Options{ExcludeRequestBody: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
			Status: rec.Code, Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		}
		if err := openapi3filter.ValidateResponse(r.Context(), in); err != nil {
			t.Errorf("%s %s → %d drifts from openapi.json: %v\n%.500s", r.Method, r.URL.Path, rec.Code, err, body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	resp, body := e.do("GET", "/openapi.json", "")
	if resp.StatusCode != 200 || !bytes.Equal(body, api.OpenAPI) {
		t.Fatalf("/openapi.json: %d", resp.StatusCode)
	}
	specRouter(t)
}

// loadSpec loads openapi.json.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// routeCodes are the status codes each route of the server can send, by
// what it is made of: every /v1 route authenticates (401; 429 past a rate;
// 500; 503 when no database connection frees up), a route of one job looks
// it up (400 for an id that is not a job ID, 404), a route that reads a
// body refuses it (400, 413, 415), and each handler adds its own.
var routeCodes = []struct {
	method, path    string
	auth, job, body bool
	codes           []int // the handler's own
}{
	{"POST", "/v1/jobs", true, false, true, []int{200, 202, 429}},
	{"GET", "/v1/jobs", true, false, false, []int{200, 400}},
	{"GET", "/v1/jobs/{id}", true, true, false, []int{200}},
	{"GET", "/v1/jobs/{id}/result", true, true, false, []int{200, 409, 410}},
	{"GET", "/v1/jobs/{id}/chunks", true, true, false, []int{200}},
	{"GET", "/v1/jobs/{id}/events", true, true, false, []int{200, 400}},
	{"GET", "/v1/jobs/{id}/stream", true, true, false, []int{200, 204, 400, 429, 500, 503}},
	{"POST", "/v1/jobs/{id}/cancel", true, true, false, []int{200}},
	{"POST", "/v1/jobs/{id}/resume", true, true, true, []int{202, 409, 429}},
	{"POST", "/v1/jobs/{id}/remerge", true, true, false, []int{202, 409, 429}},
	{"GET", "/healthz", false, false, false, []int{200}},
	{"GET", "/readyz", false, false, false, []int{200, 503}},
	{"GET", "/openapi.json", false, false, false, []int{200}},
}

// The document serves generators: every operation has a unique
// operationId, the document a license, POST /v1/jobs a required body (the
// server refuses an empty one; resume's is optional, as the server takes
// none), job IDs format uuid with the pattern the server checks, and every
// status code a route can send is among its responses.
func TestOpenAPIForGenerators(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	if doc.Info.License == nil || doc.Info.License.Name == "" {
		t.Error("info has no license")
	}
	seen := map[string]string{}
	ops := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := seen[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %s", where, other, op.OperationID)
			}
			seen[op.OperationID] = where
			for _, p := range op.Parameters {
				if p.Value.In == "path" && p.Value.Name == "id" {
					if s := p.Value.Schema.Value; s.Format != "uuid" || s.Pattern == "" {
						t.Errorf("%s: id has format %q, pattern %q", where, s.Format, s.Pattern)
					}
				}
			}
		}
	}
	if ops != len(routeCodes) {
		t.Errorf("openapi.json has %d operations, the server %d routes", ops, len(routeCodes))
	}
	if b := doc.Paths.Find("/v1/jobs").Post.RequestBody; b == nil || !b.Value.Required {
		t.Error("POST /v1/jobs: the request body is not required")
	}
	if b := doc.Paths.Find("/v1/jobs/{id}/resume").Post.RequestBody; b == nil || b.Value.Required {
		t.Error("POST /v1/jobs/{id}/resume: the request body (optional) is missing or required")
	}
	for _, name := range []string{"Accepted.id", "Status.id", "Result.job_id", "Events.job_id", "Chunks.job_id", "JobSummary.id", "StreamEnd.id"} {
		schema, field, _ := strings.Cut(name, ".")
		s := doc.Components.Schemas[schema]
		if s == nil || s.Value.Properties[field] == nil || s.Value.Properties[field].Value.Format != "uuid" {
			t.Errorf("%s is not format uuid", name)
		}
	}
	for _, rc := range routeCodes {
		codes := slices.Clone(rc.codes)
		if rc.auth {
			codes = append(codes, 401, 429, 500, 503)
		}
		if rc.job {
			codes = append(codes, 400, 404, 500, 503)
		}
		if rc.body {
			codes = append(codes, 400, 413, 415)
		}
		op := doc.Paths.Find(rc.path).GetOperation(rc.method)
		if op == nil {
			t.Errorf("%s %s is not in openapi.json", rc.method, rc.path)
			continue
		}
		for _, code := range codes {
			if op.Responses.Status(code) == nil {
				t.Errorf("%s %s can answer %d, which openapi.json does not list", rc.method, rc.path, code)
			}
		}
	}
}
