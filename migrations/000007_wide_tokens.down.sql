-- Back to integer token columns. A row whose count no longer fits fails
-- the cast (integer out of range), and this migration with it: such usage
-- cannot go back into the narrower schema.
DROP VIEW daily_cost;
DROP VIEW job_audit;
DROP VIEW llm_calls;

ALTER TABLE chunks
    ALTER COLUMN input_tokens TYPE integer,
    ALTER COLUMN cached_tokens TYPE integer,
    ALTER COLUMN output_tokens TYPE integer,
    ALTER COLUMN reasoning_tokens TYPE integer;
ALTER TABLE call_failures
    ALTER COLUMN input_tokens TYPE integer,
    ALTER COLUMN cached_tokens TYPE integer,
    ALTER COLUMN output_tokens TYPE integer,
    ALTER COLUMN reasoning_tokens TYPE integer;

CREATE VIEW llm_calls AS
SELECT c.job_id, c.seq, c.task_id, c.attempt, 'succeeded'::text AS status, j.model,
       c.previous_response_id, c.response_id, 200 AS http_status, NULL::text AS error_type, NULL::text AS error,
       c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.cost_usd, c.latency_ms,
       c.call_started_at AS started_at, c.created_at AS finished_at
FROM chunks c JOIN jobs j ON j.id = c.job_id
UNION ALL
SELECT f.job_id, f.seq, f.task_id, f.attempt, f.status, j.model,
       f.previous_response_id, f.response_id, f.http_status, f.error_type, f.error,
       f.input_tokens, f.cached_tokens, f.output_tokens, f.reasoning_tokens, f.cost_usd, f.latency_ms,
       f.started_at, f.finished_at
FROM call_failures f JOIN jobs j ON j.id = f.job_id;

CREATE VIEW job_audit AS
SELECT j.id AS job_id, j.tenant_id, j.model, j.format, j.status AS job_status, c.seq, c.task_id, c.attempt,
       c.response_id, c.previous_response_id, c.finish_reason, c.raw_status, c.incomplete_reason,
       c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.cost_usd, c.latency_ms,
       length(c.content) AS bytes, c.should_continue, c.decision->>'resolved_by' AS resolved_by, c.stop_reason,
       (SELECT count(*) FROM call_failures f WHERE f.job_id = c.job_id AND f.seq = c.seq) AS failed_attempts,
       c.call_started_at, c.created_at AS stored_at,
       c.strategy, c.prompt, c.max_output_tokens, c.tool_calls, c.cum_records, c.stream_broken
FROM chunks c JOIN jobs j ON j.id = c.job_id;

CREATE VIEW daily_cost AS
SELECT date_trunc('day', c.finished_at)::date AS day, j.model, j.tenant_id, count(*) AS calls,
       count(*) FILTER (WHERE c.status <> 'succeeded') AS unsuccessful_calls,
       sum(c.input_tokens) AS input_tokens, sum(c.cached_tokens) AS cached_tokens,
       sum(c.output_tokens) AS output_tokens, sum(c.reasoning_tokens) AS reasoning_tokens,
       sum(c.cost_usd) AS cost_usd
FROM llm_calls c JOIN jobs j ON j.id = c.job_id
GROUP BY 1, 2, 3;
