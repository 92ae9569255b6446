package provider

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
)

// Reply body limits. openai-go reads a non-streamed body whole
// (io.ReadAll) and a stream's events line by line with no bound on an
// event, so the bound is put on the body itself: a middleware wraps each
// call's response body in a reader that fails once more bytes arrive than
// the call can honestly need. The limit follows the call's output budget,
// as the text a reply may carry does (continuation.MaxReplyText):
//
//   - bodyBase for the envelope (ids, usage, status, metadata);
//   - twice the request's own size, as a Responses object echoes the
//     instructions, tools and schema it was sent;
//   - bodyExpansion times the text bound: JSON escapes text on the wire,
//     up to 6 bytes for a control character and 6–12 for non-ASCII text
//     from servers that escape it (\uXXXX, surrogate pairs), about 2 on
//     average for such text and 1 for ASCII;
//   - for a stream, eventBytesPerToken per output token more: servers send
//     about one event per token, each with ~150–250 bytes of framing
//     (type, item id, indexes, sequence number), and the terminal event
//     carries the whole response again.
//
// With the default budget (4,096 tokens) that is about 2.4 MB for a body
// and 3.4 MB for a stream, plus twice the request; at the largest budget
// (200,000 tokens), 53 MB and 104 MB. A 200 MiB reply to a default call is
// cut after its first 2.4 MB.
const (
	bodyBase           = 1 << 20
	bodyExpansion      = 4
	eventBytesPerToken = 256
	// echoedRequest is the request size a poll or cancel allows for, not
	// having sent the request the response echoes: twice the most the HTTP
	// API accepts (1 MiB).
	echoedRequest = 2 << 20
)

// bodyLimit is the most bytes a reply to a call may have (see above).
func bodyLimit(maxOutputTokens, requestBytes int, stream bool) int64 {
	n := bodyBase + 2*int64(requestBytes) + bodyExpansion*continuation.MaxReplyText(maxOutputTokens)
	if stream {
		n += eventBytesPerToken * int64(budget(maxOutputTokens))
	}
	return n
}

// budget is the call's output budget, or the largest any job may ask when
// it is not known (0).
func budget(maxOutputTokens int) int {
	if maxOutputTokens <= 0 {
		return carryovertype.MaxMaxOutputTokens
	}
	return maxOutputTokens
}

// errReplyTooLarge is the error a capped body returns past its limit.
type errReplyTooLarge struct{ limit int64 }

func (e *errReplyTooLarge) Error() string {
	return fmt.Sprintf("the reply is larger than %d bytes, the most a call of its output budget may return", e.limit)
}

// limitReply is the request option that caps the call's response body at
// limit bytes (the error body of a failed call included).
func limitReply(limit int64) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if res != nil && res.Body != nil {
			res.Body = &cappedBody{rc: res.Body, left: limit, limit: limit}
		}
		return res, err
	})
}

// cappedBody reads a body until limit bytes, then fails with
// errReplyTooLarge if there is more (as http.MaxBytesReader does).
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
	err         error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Read one byte past the limit, to tell a body of exactly the limit
	// from a longer one.
	if int64(len(p))-1 > b.left {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		b.err = err
		return n, err
	}
	n, b.left = int(b.left), 0
	b.err = &errReplyTooLarge{limit: b.limit}
	return n, b.err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// classify is continuation.Classify, with a reply past its limit a
// malformed model error: the reply was refused, not lost in transit.
func classify(err error) *continuation.CallError {
	var big *errReplyTooLarge
	if errors.As(err, &big) {
		return &continuation.CallError{Type: carryovertype.ErrModel, HTTPStatus: http.StatusOK, Malformed: true, Err: big}
	}
	return continuation.Classify(err)
}
