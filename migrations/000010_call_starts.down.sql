DROP VIEW daily_cost;
DROP VIEW llm_calls;
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
CREATE VIEW daily_cost AS
SELECT date_trunc('day', c.finished_at)::date AS day, j.model, j.tenant_id, count(*) AS calls,
       count(*) FILTER (WHERE c.status <> 'succeeded') AS unsuccessful_calls,
       sum(c.input_tokens) AS input_tokens, sum(c.cached_tokens) AS cached_tokens,
       sum(c.output_tokens) AS output_tokens, sum(c.reasoning_tokens) AS reasoning_tokens,
       sum(c.cost_usd) AS cost_usd
FROM llm_calls c JOIN jobs j ON j.id = c.job_id
GROUP BY 1, 2, 3;
CREATE OR REPLACE FUNCTION carryover_delete_job_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chunks c USING deleted d WHERE c.job_id = d.id;
    DELETE FROM job_events e USING deleted d WHERE e.job_id = d.id;
    DELETE FROM background_calls b USING deleted d WHERE b.job_id = d.id;
    RETURN NULL;
END $$;
ALTER TABLE call_failures DROP COLUMN request_sent, DROP COLUMN call_id;
DROP TABLE call_starts;
