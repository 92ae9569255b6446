package simulator

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestResponsesStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prompt, model string
		wantFinal           string
		wantReason          string
	}{
		{"incomplete", "[[sim format=csv size=2000]]", "gpt-4o-mini", "response.incomplete", "max_output_tokens"},
		{"completed", "[[sim format=csv size=100]]", "gpt-4o-mini", "response.completed", ""},
		{"reasoning", "[[sim format=csv size=2000]]", "o3", "response.incomplete", "max_output_tokens"},
		{"failed", "[[sim faults=failed@0]]", "gpt-4o-mini", "response.failed", ""},
		{"malformed", "[[sim faults=malformed@0]]", "gpt-4o-mini", "", ""},
	}
	_, client := newTestClient(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _, _ := DocumentFor(tt.prompt)
			stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
				Model:           tt.model,
				MaxOutputTokens: openai.Int(200),
				Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(tt.prompt)},
			})
			var deltas strings.Builder
			var final responses.ResponseStreamEventUnion
			seq := int64(0)
			for stream.Next() {
				ev := stream.Current()
				if ev.SequenceNumber != seq {
					t.Fatalf("sequence_number %d, want %d", ev.SequenceNumber, seq)
				}
				seq++
				if ev.Type == "response.output_text.delta" {
					deltas.WriteString(ev.Delta)
				}
				final = ev
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if tt.wantFinal == "" {
				if strings.HasPrefix(string(final.Type), "response.completed") || final.Type == "response.incomplete" {
					t.Fatal("cut stream has a terminal event")
				}
				return
			}
			if string(final.Type) != tt.wantFinal || final.Response.IncompleteDetails.Reason != tt.wantReason {
				t.Fatalf("final event %q reason %q", final.Type, final.Response.IncompleteDetails.Reason)
			}
			if got := deltas.String(); got != final.Response.OutputText() || got != doc[:len(got)] {
				t.Fatalf("deltas %q do not match the final text or the document", got)
			}
		})
	}
}
