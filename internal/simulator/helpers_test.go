package simulator

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// newTestClient starts a simulator behind httptest and returns an openai-go
// client pointed at it, configured as production would be minus retries.
func newTestClient(t *testing.T, cfg Config) (*Server, openai.Client) {
	t.Helper()
	sim := New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("test"),
		option.WithMaxRetries(0),
	)
	return sim, client
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func newRequest(method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer test")
	return req
}
