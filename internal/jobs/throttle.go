package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/carryover/carryover/carryovertype"
	"github.com/carryover/carryover/internal/continuation"
	"github.com/carryover/carryover/internal/throttle"
)

// throttled is a call the shared provider throttle held back: the chunk's
// task is re-scheduled after delay, out of its slot, without a call made or
// a failure counted.
type throttled struct {
	delay time.Duration
	model string
}

func (e *throttled) Error() string {
	return fmt.Sprintf("provider throttle: model %s is at its requests or tokens per minute; calling in %s", e.model, e.delay)
}

// charsPerToken is the estimate of a call's input tokens from its text:
// about four characters a token for English and code.
const charsPerToken = 4

// estimateTokens is what call seq counts against a tokens-per-minute limit
// when it arrives: its input, estimated from its text, plus its output
// budget. A stateful continuation's input is also the stored conversation,
// which the provider reads again: the job's input (sent with every call
// here too), the answer so far and the continuation prompts before this one.
func estimateTokens(req continuation.CallRequest, seq int, cumOutput int64) int {
	n := len(req.Instructions) + len(req.Input.Prompt) + len(req.Partial) + len(req.Prompt) + len(req.Tools)
	for _, m := range req.Input.Messages {
		n += len(m.Content)
	}
	if req.JSONSchema != nil {
		n += len(req.JSONSchema.Schema)
	}
	if (req.Strategy == "" || req.Strategy == carryovertype.StrategyStateful) && req.PreviousID != "" && seq > 1 {
		n += (seq - 1) * len(req.Prompt)
	}
	est := n/charsPerToken + 1
	if (req.Strategy == "" || req.Strategy == carryovertype.StrategyStateful) && req.PreviousID != "" {
		est += int(cumOutput)
	}
	return est + req.MaxOutputTokens
}

// admit asks the throttle for the chunk's call. Refused, it returns a
// *throttled — unless this is the task's last delivery, which asynq would
// archive on any error: that call goes, and a 429 is met as without a
// throttle. A throttle that cannot be asked (Redis down) lets the call go.
func (h *Handlers) admit(ctx context.Context, r *chunkRun) error {
	if h.cfg.Throttle == nil {
		return nil
	}
	tk, wait, err := h.cfg.Throttle.Admit(ctx, r.req.Model, estimateTokens(r.req, r.seq, r.claim.CumOutput))
	if err != nil {
		r.log.Warn("the provider throttle could not be asked; calling without it", "err", err)
		return nil
	}
	if wait > 0 {
		if maxRetry, ok := asynq.GetMaxRetry(ctx); ok && r.attempt >= maxRetry {
			r.log.Warn("the provider throttle asks to wait, but this is the chunk's last delivery; calling now", "wait", wait)
			return nil
		}
		return &throttled{delay: wait, model: r.req.Model}
	}
	r.ticket = tk
	return nil
}

// settle corrects the throttle's count of the call's tokens to its input
// as the reply reported, plus its budget.
func (h *Handlers) settle(ctx context.Context, r *chunkRun) {
	if h.cfg.Throttle == nil || r.ticket.Reserved == 0 || r.resp.Usage.Input <= 0 {
		return
	}
	used := int(r.resp.Usage.Input) + r.req.MaxOutputTokens
	if err := h.cfg.Throttle.Settle(context.WithoutCancel(ctx), r.ticket, used); err != nil {
		r.log.Warn("could not correct the provider throttle's token count", "err", err)
	}
	r.ticket = throttle.Ticket{}
}

// withModel marks the call's requests for the throttle, which learns from
// their replies' rate-limit headers.
func (h *Handlers) withModel(ctx context.Context, model string) context.Context {
	if h.cfg.Throttle == nil {
		return ctx
	}
	return throttle.WithModel(ctx, model)
}
