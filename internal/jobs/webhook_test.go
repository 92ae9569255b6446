package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/egress"
)

// webhook_url is checked against the egress policy: the default one by
// Normalize, the operator's by NormalizeFor; a refusal names the field.
func TestWebhookURLValidation(t *testing.T) {
	t.Parallel()
	dev, err := egress.Parse("http,127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url    string
		policy egress.Policy
		want   string // "" for accepted
	}{
		{"https://hooks.example.com/x", egress.Policy{}, ""},
		{"http://hooks.example.com/x", egress.Policy{}, "https"},
		{"http://127.0.0.1:8080/x", dev, ""},
		{"https://127.0.0.1/x", egress.Policy{}, "loopback"},
		{"https://[::ffff:10.0.0.1]/x", dev, "RFC 1918"},
		{"https://user:pass@hooks.example.com/x", egress.Policy{}, "credentials"},
		{"http://user:pass@127.0.0.1/x", dev, "credentials"},
		{"https://hooks.example.com/" + strings.Repeat("a", maxWebhookURL), egress.Policy{}, "longer"},
	} {
		_, err := NormalizeFor(carryovertype.Request{Model: "m", Input: carryovertype.Input{Prompt: "p"}, WebhookURL: c.url}, c.policy)
		var ve *carryovertype.ValidationError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%.60s refused: %v", c.url, err)
		case c.want == "":
		case !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "webhook_url" || !strings.Contains(ve.Fields[0].Message, c.want):
			t.Errorf("%.60s: %v, want a webhook_url error saying %q", c.url, err, c.want)
		}
	}
}
