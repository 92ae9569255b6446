// Package api serves carryover over HTTP for producers that are not written
// in Go: submit a job, poll it, read its result, chunks and events, cancel,
// resume or merge it again. It is a thin layer over the public client, so
// validation and idempotency are the same as for every other producer.
package api

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/client"
	"github.com/carryover/carryover/internal/jobs"
	"github.com/carryover/carryover/internal/ratelimit"
	"github.com/carryover/carryover/internal/tracing"
)

// OpenAPI is the API's OpenAPI 3 document (openapi.json, checked in; the
// tests validate every response against it).
//
//go:embed openapi.json
var OpenAPI []byte

// MaxBodyBytes bounds a request body; a job request is a prompt and settings.
const MaxBodyBytes = 1 << 20

// Server is the HTTP API.
type Server struct {
	c       *client.Client
	log     *slog.Logger
	limits  *Limits // nil: no rate limits
	streams *streamSlots
	// draining closes when the server shuts down: open streams end with a
	// retry hint, so their clients reconnect elsewhere at once, and streams
	// still starting are refused with a 503.
	draining  chan struct{}
	drainOnce sync.Once
}

// Drain ends every open progress stream with an SSE retry hint, as its
// lifetime's end does. Call it when the server shuts down, before
// http.Server.Shutdown (worker api does): a stream never goes idle, so
// Shutdown would otherwise wait on it.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// New builds the API over a client.
func New(c *client.Client, log *slog.Logger, opts ...Option) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{c: c, log: log, streams: newStreamSlots(StreamLimits{}), draining: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Handler routes the API. Every /v1 route needs a bearer API key; a job is
// visible only to its own tenant (another tenant's job is a 404).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", s.auth(s.createJob))
	mux.HandleFunc("GET /v1/jobs", s.auth(s.listJobs))
	mux.HandleFunc("GET /v1/jobs/{id}", s.auth(s.owned(s.getJob)))
	mux.HandleFunc("GET /v1/jobs/{id}/result", s.auth(s.owned(s.getResult)))
	mux.HandleFunc("GET /v1/jobs/{id}/chunks", s.auth(s.owned(s.getChunks)))
	mux.HandleFunc("GET /v1/jobs/{id}/events", s.auth(s.owned(s.getEvents)))
	mux.HandleFunc("GET /v1/jobs/{id}/stream", s.auth(s.owned(s.streamJob)))
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.auth(s.owned(s.cancelJob)))
	mux.HandleFunc("POST /v1/jobs/{id}/resume", s.auth(s.owned(s.resumeJob)))
	mux.HandleFunc("POST /v1/jobs/{id}/remerge", s.auth(s.owned(s.remergeJob)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// No route: the mux answers 404, or 405 with Allow for a known
		// path; either becomes a problem document like every other error.
		var miss missed
		h.ServeHTTP(&miss, r)
		if miss.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", miss.header.Get("Allow"))
			problem(w, miss.status, "method not allowed", r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+miss.header.Get("Allow")+")")
			return
		}
		problem(w, http.StatusNotFound, "not found", r.Method+" "+r.URL.Path+" is not a route of this API (see /openapi.json)")
	})
}

// missed records the status and headers of the mux's own answer to a request
// no route matched, discarding its plain-text body.
type missed struct {
	header http.Header
	status int
}

func (m *missed) Header() http.Header {
	if m.header == nil {
		m.header = http.Header{}
	}
	return m.header
}
func (m *missed) Write(b []byte) (int, error) { return len(b), nil }
func (m *missed) WriteHeader(status int)      { m.status = status }

type tenantKey struct{}

// auth resolves the bearer key to its tenant; the key itself is never logged.
// With limits, a client whose failed authentications are spent is refused
// before its key is looked at, and each key is held to its rate.
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var from string
		if s.limits != nil {
			from = s.clientOf(r)
			if s.authThrottled(w, r, from) {
				return
			}
		}
		key, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			s.authFailed(r, from)
			w.Header().Set("WWW-Authenticate", `Bearer realm="carryover"`)
			problem(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <API key>")
			return
		}
		// Before the key is looked up, so a flood with one key costs
		// Postgres nothing past the key's rate.
		if s.rateLimited(w, r, key) {
			return
		}
		tenant, err := s.c.Authenticate(r.Context(), key)
		if errors.Is(err, client.ErrUnauthorized) {
			s.authFailed(r, from)
			w.Header().Set("WWW-Authenticate", `Bearer realm="carryover", error="invalid_token"`)
			problem(w, http.StatusUnauthorized, "unauthorized", "unknown or revoked API key")
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	}
}

// bearer reads the token of an Authorization header in the Bearer scheme,
// whose name is case-insensitive (RFC 7235, 2.1), tolerating extra spaces
// around and between the two.
func bearer(header string) (string, bool) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	return token, strings.EqualFold(scheme, "Bearer") && token != ""
}

func tenantOf(r *http.Request) string {
	t, _ := r.Context().Value(tenantKey{}).(string)
	return t
}

// owned lets a request through only for a job of the caller's tenant;
// another tenant's job is not found, not forbidden, so IDs leak nothing.
// An id that is not a job ID at all is a 400 naming it, before any lookup.
func (s *Server) owned(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !jobID(r.PathValue("id")) {
			problem(w, http.StatusBadRequest, "invalid job ID", "a job ID is a UUID in the form the API hands out",
				client.FieldError{Field: "id", Message: "is not a job ID: a lowercase UUID such as 0b5c2a47-6f0e-4d1a-9a8e-2f4c7d9e1b3a"})
			return
		}
		owner, err := s.c.Owner(r.Context(), r.PathValue("id"))
		if err == nil && owner != tenantOf(r) {
			err = client.ErrNotFound
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		next(w, r)
	}
}

// jobID reports whether id is a job ID as the API hands them out: a UUID
// in its canonical form (lowercase hex, hyphenated; openapi.json's pattern).
// Other spellings of a UUID (upper case, braces, urn:uuid:, no hyphens) are
// refused rather than read, so that one job has one ID everywhere: in
// links, task IDs, logs and webhook bodies.
func jobID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// Problem is an RFC 9457 problem document; Errors names every bad field.
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Detail string              `json:"detail,omitempty"`
	Errors []client.FieldError `json:"errors,omitempty"`
	// Quota names the quota a 429 refused a new job for.
	Quota string `json:"quota,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func problem(w http.ResponseWriter, status int, title, detail string, fields ...client.FieldError) {
	writeProblem(w, Problem{Type: "about:blank", Title: title, Status: status, Detail: detail, Errors: fields})
}

func writeProblem(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// fail maps an error from the client to a problem document.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ve *client.ValidationError
	var qe *client.QuotaError
	switch {
	case errors.As(err, &ve):
		problem(w, http.StatusBadRequest, "invalid request", ve.Error(), ve.Fields...)
	case errors.As(err, &qe):
		w.Header().Set("Retry-After", ratelimit.RetryAfter(qe.RetryAfter))
		writeProblem(w, Problem{Type: "about:blank", Title: "quota exceeded", Status: http.StatusTooManyRequests,
			Detail: qe.Error(), Quota: qe.Quota})
	case errors.Is(err, client.ErrNotFound):
		problem(w, http.StatusNotFound, "job not found", "")
	case errors.Is(err, client.ErrNotReady):
		problem(w, http.StatusConflict, "not ready", err.Error())
	case errors.Is(err, client.ErrPruned):
		problem(w, http.StatusGone, "content removed", err.Error())
	case errors.Is(err, jobs.ErrNotResumable):
		problem(w, http.StatusConflict, "not resumable", err.Error())
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		// The request has no deadline of its own: this is the bound on
		// waiting for a database connection (client.Config.AcquireTimeout).
		s.log.WarnContext(r.Context(), "api request found no free database connection", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusServiceUnavailable, "busy", "no database connection was free in time; retry shortly")
	default:
		s.log.ErrorContext(r.Context(), "api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		problem(w, http.StatusInternalServerError, "internal error", "")
	}
}

// readBody reads a JSON body: application/json (or no Content-Type), at
// most MaxBodyBytes. It answers the request itself when it cannot.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		problem(w, http.StatusUnsupportedMediaType, "unsupported media type", "send application/json")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		problem(w, http.StatusRequestEntityTooLarge, "request body too large", fmt.Sprintf("at most %d bytes", MaxBodyBytes))
		return nil, false
	case err != nil:
		problem(w, http.StatusBadRequest, "invalid request", "the body could not be read: "+err.Error())
		return nil, false
	}
	return body, true
}

// refuse answers 400 naming every bad field: fields, then each problem of
// validation (err, a *client.ValidationError) on a field fields do not name.
// A body is decoded in one pass that names every wrong type, unknown field
// and explicit 0 (carryovertype.DecodeRequest); validating what did decode
// adds the ranges and enums, so one answer lists every problem.
func refuse(w http.ResponseWriter, merge func(...[]client.FieldError) []client.FieldError, fields []client.FieldError, err error) {
	var ve *client.ValidationError
	if errors.As(err, &ve) {
		fields = merge(fields, ve.Fields)
	}
	problem(w, http.StatusBadRequest, "invalid request", (&client.ValidationError{Fields: fields}).Error(), fields...)
}

// Links point a caller at what it can do with a job.
type Links struct {
	Self    string `json:"self"`
	Result  string `json:"result"`
	Chunks  string `json:"chunks"`
	Events  string `json:"events"`
	Stream  string `json:"stream"`
	Cancel  string `json:"cancel"`
	Resume  string `json:"resume"`
	Remerge string `json:"remerge"`
}

func links(id string) Links {
	p := "/v1/jobs/" + id
	return Links{Self: p, Result: p + "/result", Chunks: p + "/chunks", Events: p + "/events", Stream: p + "/stream",
		Cancel: p + "/cancel", Resume: p + "/resume", Remerge: p + "/remerge"}
}

// Accepted is the answer to POST /v1/jobs.
type Accepted struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Created bool   `json:"created"`
	Links   Links  `json:"links"`
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	req, fields, err := carryovertype.DecodeRequest(body)
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid JSON", err.Error())
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if req.IdempotencyKey != "" && req.IdempotencyKey != key {
			fields = append(fields, client.FieldError{Field: "idempotency_key", Message: "differs from the Idempotency-Key header"})
		}
		req.IdempotencyKey = key
	}
	req.Tenant = tenantOf(r)
	if len(fields) > 0 {
		_, err := s.c.Validate(req)
		refuse(w, carryovertype.MergeRequestErrors, fields, err)
		return
	}
	// A caller that sends a W3C traceparent gets the job's trace under its
	// own span.
	ctx := tracing.Extract(r.Context(), r.Header.Get("Traceparent"))
	job, err := s.c.Enqueue(ctx, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusAccepted
	if !job.Created {
		status = http.StatusOK // the same key returned the same job
	}
	w.Header().Set("Location", links(job.ID).Self)
	writeJSON(w, status, Accepted{ID: job.ID, Status: job.Status, Created: job.Created, Links: links(job.ID)})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	st, err := s.c.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// contentTypes are the media types of merged documents by format.
var contentTypes = map[string]string{
	"csv": "text/csv; charset=utf-8", "json": "application/json", "jsonl": "application/jsonl",
	"markdown": "text/markdown; charset=utf-8", "diff": "text/x-diff; charset=utf-8",
	"code": "text/plain; charset=utf-8", "text": "text/plain; charset=utf-8",
}

// getResult serves the merged document with its format's Content-Type, or,
// when the caller accepts only JSON, the document and its metadata as JSON.
func (s *Server) getResult(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	res, err := s.c.Result(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "application/json") || r.URL.Query().Get("view") == "json" {
		writeJSON(w, http.StatusOK, res)
		return
	}
	var meta struct {
		Format    string `json:"format"`
		Detection *struct {
			Format string `json:"format"`
		} `json:"detection"`
	}
	_ = json.Unmarshal(res.Metadata, &meta)
	format := meta.Format
	if meta.Detection != nil && meta.Detection.Format != "" {
		format = meta.Detection.Format
	}
	ct, ok := contentTypes[format]
	if !ok {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Carryover-Job-Status", res.Status)
	w.Header().Set("Carryover-Merge-Success", strconv.FormatBool(res.MergeSuccess))
	_, _ = io.WriteString(w, res.Content)
}

func (s *Server) getChunks(w http.ResponseWriter, r *http.Request) {
	st, err := s.c.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job_id": st.ID, "chunks": st.ChunkDetails})
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request) {
	var after int64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			problem(w, http.StatusBadRequest, "invalid request", "after must be an event id",
				client.FieldError{Field: "after", Message: "must be a non-negative integer"})
			return
		}
		after = n
	}
	evs, err := s.c.Events(r.Context(), r.PathValue("id"), after)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job_id": r.PathValue("id"), "events": evs})
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	st, err := s.c.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) resumeJob(w http.ResponseWriter, r *http.Request) {
	var o client.ResumeOptions
	if r.ContentLength != 0 {
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		if len(bytes.TrimSpace(body)) > 0 {
			var fields []client.FieldError
			var err error
			if o, fields, err = carryovertype.DecodeResumeOptions(body); err != nil {
				problem(w, http.StatusBadRequest, "invalid JSON", err.Error())
				return
			}
			if len(fields) > 0 {
				refuse(w, carryovertype.MergeResumeErrors, fields, client.ValidateResume(o))
				return
			}
		}
	}
	st, err := s.c.Resume(r.Context(), r.PathValue("id"), o)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, st)
}

func (s *Server) remergeJob(w http.ResponseWriter, r *http.Request) {
	st, err := s.c.Remerge(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, st)
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.c.Ping(ctx); err != nil {
		// Anyone may ask: the answer names the service, never the error
		// (addresses, user names, driver details), which only the log gets.
		detail := "postgres unavailable"
		if errors.Is(err, client.ErrRedisUnavailable) {
			detail = "redis unavailable"
		}
		s.log.WarnContext(r.Context(), "not ready", "err", err)
		problem(w, http.StatusServiceUnavailable, "not ready", detail)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
