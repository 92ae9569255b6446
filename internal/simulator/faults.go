package simulator

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// writeHTTPFault writes the reply of a fault that is an HTTP error and
// reports its status; ok is false for faults that are not HTTP errors.
func writeHTTPFault(w http.ResponseWriter, f Fault) (status int, ok bool) {
	switch f.Kind {
	case Fault429:
		wait := time.Second
		if f.Arg != "" {
			wait, _ = parseSeconds(f.Arg) // validated by parseFault
		}
		h := w.Header()
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		h.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds(), 10))
		h.Set("x-ratelimit-remaining-requests", "0")
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "",
			"Rate limit reached for requests (simulated). Please try again in "+wait.String()+".")
		return http.StatusTooManyRequests, true
	case Fault500:
		writeError(w, http.StatusInternalServerError, "server_error", "server_error", "",
			"The server had an error while processing your request (simulated). Sorry about that!")
		return http.StatusInternalServerError, true
	case Fault400:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "input",
			"Invalid request (simulated fault).")
		return http.StatusBadRequest, true
	}
	return 0, false
}

// writeMalformed sends a 200 whose JSON body is cut in half, as a connection
// dropped mid-body would leave it.
func writeMalformed(w http.ResponseWriter, body []byte) {
	writeBody(w, http.StatusOK, body[:len(body)/2])
}

func outcomeOf(status int) string { return "error:" + strconv.Itoa(status) }
