package webhook

import (
	"encoding/base64"
	"net/http"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	secret, err := ParseSecret("whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123")))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"job.succeeded"}`)
	h := http.Header{}
	SetHeaders(h, secret, "msg_1", now, body)
	if err := Verify(secret, h, body, now, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if Verify(secret, h, []byte(`{"type":"job.failed"}`), now, 5*time.Minute) == nil {
		t.Fatal("a changed body verified")
	}
	if Verify([]byte("another secret value"), h, body, now, 5*time.Minute) == nil {
		t.Fatal("another secret verified")
	}
	if Verify(secret, h, body, now.Add(time.Hour), 5*time.Minute) == nil {
		t.Fatal("a replay an hour later verified")
	}
	// The Standard Webhooks reference vector.
	ref, _ := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := Sign(ref, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("reference vector: %s", got)
	}
	if _, err := ParseSecret("whsec_short"); err == nil {
		t.Fatal("a short secret accepted")
	}
}
