package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/carryover/carryover/carryovertype"
)

// CallError is a model call that produced no usable response.
type CallError struct {
	Type       carryovertype.ErrorType
	HTTPStatus int           // 0 when no HTTP response came back
	RetryAfter time.Duration // from Retry-After / Retry-After-Ms, 0 if absent
	Malformed  bool          // the body could not be read as a response
	Err        error
}

func (e *CallError) Error() string {
	if e.HTTPStatus != 0 {
		return fmt.Sprintf("%s error (HTTP %d): %v", e.Type, e.HTTPStatus, e.Err)
	}
	return fmt.Sprintf("%s error: %v", e.Type, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Retryable reports whether the same call may succeed if made again.
func (e *CallError) Retryable() bool {
	switch e.Type {
	case carryovertype.ErrValidation, carryovertype.ErrTool:
		return false
	}
	return true
}

// Classify turns an error from a provider call into a CallError.
func Classify(err error) *CallError {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		c := &CallError{HTTPStatus: apiErr.StatusCode, Err: fmt.Errorf("%s", apiMessage(apiErr))}
		switch s := apiErr.StatusCode; {
		case s == http.StatusTooManyRequests:
			c.Type = carryovertype.ErrRateLimit
		case s == http.StatusRequestTimeout || s == http.StatusGatewayTimeout:
			c.Type = carryovertype.ErrTimeout
		case s >= 500:
			c.Type = carryovertype.ErrModel
		case s >= 400:
			c.Type = carryovertype.ErrValidation
		default:
			c.Type = carryovertype.ErrUnknown
		}
		if apiErr.Response != nil {
			c.RetryAfter = RetryAfter(apiErr.Response.Header, time.Now())
		}
		return c
	}
	var syn *json.SyntaxError
	var ute *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &ute) || strings.Contains(err.Error(), "unexpected end of JSON input") {
		return &CallError{Type: carryovertype.ErrModel, Malformed: true, Err: err}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &CallError{Type: carryovertype.ErrTimeout, Err: err}
	}
	return &CallError{Type: carryovertype.ErrUnknown, Err: err}
}

// apiMessage gives an API error's message without the request dump openai-go
// puts in Error(); it never includes headers, so no key can leak into logs.
func apiMessage(e *openai.Error) string {
	if e.Message != "" {
		return e.Message
	}
	return http.StatusText(e.StatusCode)
}

// RetryAfter reads OpenAI's retry-after-ms (preferred, finer) or the standard
// Retry-After header (seconds or an HTTP date).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	return 0
}
