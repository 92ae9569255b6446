-- Continuation strategies, tool calls, record guards and per-chunk decision
-- events (issues 4 and 6).

-- A job's request options beyond the prompt: function tools offered to the
-- model, a JSON Schema for structured output, streaming.
ALTER TABLE jobs ADD COLUMN options jsonb NOT NULL DEFAULT '{}';

ALTER TABLE chunks
    -- how this chunk was asked for: stateful, history, prefill or overlap
    ADD COLUMN strategy          text NOT NULL DEFAULT 'stateful',
    -- the continuation prompt sent with the call (null for a first call or a prefill)
    ADD COLUMN prompt            text,
    -- the output-token budget of the call (raised above the job's for a
    -- reasoning model that spent it all on reasoning)
    ADD COLUMN max_output_tokens integer,
    -- function calls the response ended with, each marked truncated/invalid when unusable
    ADD COLUMN tool_calls        jsonb,
    -- records (CSV rows, JSON Lines, lines) in chunks 0..seq, for the max_records guard,
    -- and whether the CSV text so far ends inside a quoted field
    ADD COLUMN cum_records       bigint NOT NULL DEFAULT 0,
    ADD COLUMN in_quote          boolean NOT NULL DEFAULT false,
    -- the stream broke mid-answer: content is what arrived before it did
    ADD COLUMN stream_broken     boolean NOT NULL DEFAULT false;

-- Every chunk now writes a 'decision' event in its own transaction. Those do
-- not notify: a chunk of a watched job notifies through chunks_notify, and a
-- notifying commit takes a global lock that unwatched chunks should not pay.
DROP TRIGGER job_events_notify ON job_events;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events FOR EACH ROW
    WHEN (NEW.type <> 'decision') EXECUTE FUNCTION carryover_notify_job();

-- The audit view gains the strategy, the prompt and the tool calls.
CREATE OR REPLACE VIEW job_audit AS
SELECT j.id AS job_id, j.tenant_id, j.model, j.format, j.status AS job_status, c.seq, c.task_id, c.attempt,
       c.response_id, c.previous_response_id, c.finish_reason, c.raw_status, c.incomplete_reason,
       c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.cost_usd, c.latency_ms,
       length(c.content) AS bytes, c.should_continue, c.decision->>'resolved_by' AS resolved_by, c.stop_reason,
       (SELECT count(*) FROM call_failures f WHERE f.job_id = c.job_id AND f.seq = c.seq) AS failed_attempts,
       c.call_started_at, c.created_at AS stored_at,
       c.strategy, c.prompt, c.max_output_tokens, c.tool_calls, c.cum_records, c.stream_broken
FROM chunks c JOIN jobs j ON j.id = c.job_id;
