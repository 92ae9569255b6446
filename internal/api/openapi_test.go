package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
