package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/carryover/carryover/carryovertype"
)

func apiError(status int, header http.Header) error {
	return fmt.Errorf("call: %w", &openai.Error{StatusCode: status, Message: "boom", Response: &http.Response{StatusCode: status, Header: header}})
}

func TestClassify(t *testing.T) {
	t.Parallel()
	var syn json.SyntaxError
	tests := []struct {
		name      string
		err       error
		want      carryovertype.ErrorType
		retryable bool
		status    int
		malformed bool
	}{
		{"429", apiError(429, nil), carryovertype.ErrRateLimit, true, 429, false},
		{"500", apiError(500, nil), carryovertype.ErrModel, true, 500, false},
		{"503", apiError(503, nil), carryovertype.ErrModel, true, 503, false},
		{"504", apiError(504, nil), carryovertype.ErrTimeout, true, 504, false},
		{"408", apiError(408, nil), carryovertype.ErrTimeout, true, 408, false},
		{"400", apiError(400, nil), carryovertype.ErrValidation, false, 400, false},
		{"401", apiError(401, nil), carryovertype.ErrValidation, false, 401, false},
		{"404", apiError(404, nil), carryovertype.ErrValidation, false, 404, false},
		{"deadline", fmt.Errorf("post: %w", context.DeadlineExceeded), carryovertype.ErrTimeout, true, 0, false},
		{"bad json", fmt.Errorf("decode: %w", &syn), carryovertype.ErrModel, true, 0, true},
		{"transport", errors.New("connection refused"), carryovertype.ErrUnknown, true, 0, false},
		{"already classified", &CallError{Type: carryovertype.ErrTool, Err: errors.New("x")}, carryovertype.ErrTool, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ce := Classify(tt.err)
			if ce.Type != tt.want || ce.Retryable() != tt.retryable || ce.HTTPStatus != tt.status || ce.Malformed != tt.malformed {
				t.Fatalf("got %+v retryable=%v", ce, ce.Retryable())
			}
		})
	}
}

func TestClassifyNeverLeaksHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{"Authorization": {"Bearer sk-secret"}}
	err := fmt.Errorf("x: %w", &openai.Error{StatusCode: 401, Request: &http.Request{Header: h}, Response: &http.Response{StatusCode: 401, Header: h}})
	if msg := Classify(err).Error(); strings.Contains(msg, "sk-secret") {
		t.Fatalf("secret in error message: %s", msg)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, 3 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %s, want %s", tt.h, got, tt.want)
		}
	}
	if got := Classify(apiError(429, http.Header{"Retry-After": {"7"}})).RetryAfter; got != 7*time.Second {
		t.Errorf("429 Retry-After not carried: %s", got)
	}
}
