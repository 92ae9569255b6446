// Package webhook signs and verifies events with the Standard Webhooks
// scheme: HMAC-SHA256 over "id.timestamp.body", sent as the webhook-id,
// webhook-timestamp and webhook-signature ("v1,<base64>") headers, with a
// secret written "whsec_<base64>".
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseSecret decodes a "whsec_<base64>" secret.
func ParseSecret(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(b) < 16 {
		return nil, errors.New("webhook secret must be whsec_ followed by base64 of at least 16 bytes")
	}
	return b, nil
}

// Sign returns the webhook-signature header value.
func Sign(secret []byte, id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%s.%d.", id, ts.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SetHeaders sets the three Standard Webhooks headers on a request.
func SetHeaders(h http.Header, secret []byte, id string, ts time.Time, body []byte) {
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", Sign(secret, id, ts, body))
}

// Verify checks a received event's headers against its body, refusing
// timestamps further than tolerance from now (replays).
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsRaw, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	unix, err := strconv.ParseInt(tsRaw, 10, 64)
	if id == "" || err != nil || sigs == "" {
		return errors.New("webhook: missing or malformed headers")
	}
	ts := time.Unix(unix, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	want := Sign(secret, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: no matching signature")
}
