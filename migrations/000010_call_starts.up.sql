-- An exact audit of model calls: an attempt is "lost" only when its request
-- was sent and its outcome is unknown, never because a delivery died (or
-- failed at the claim, Postgres being down) before it called the model.
--
-- A call's start is committed before its request is sent, one row here,
-- and the row goes in the same transaction as the call's outcome (its chunk,
-- its failure, or its background_calls row). A row still here when a later
-- delivery claims the chunk (or the reconciler finds the job stale) is a
-- call sent by a delivery that died before recording what came of it: it
-- becomes a 'lost' row of call_failures. The starts of a lock-session round
-- trip share one statement, in the transaction of the chunks it saves.
CREATE TABLE call_starts (
    id                   uuid PRIMARY KEY,
    job_id               uuid NOT NULL,
    seq                  integer NOT NULL,
    task_id              text,
    attempt              integer NOT NULL DEFAULT 0,
    previous_response_id text,
    started_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX call_starts_job_seq_idx ON call_starts (job_id, seq);

-- Whether the attempt's request reached the provider: false for a delivery
-- that stopped before calling (error_type internal) or whose request never
-- left (a refused connection); NULL where that is not known (rows recorded
-- before this migration: transport errors, and the lost rows that counted
-- every delivery with no trace, calls or not).
ALTER TABLE call_failures ADD COLUMN request_sent boolean;
-- A lost row's call start (call_starts.id): should the delivery that sent
-- the call still record its outcome (its lock went with a lost session, and
-- another delivery took it for dead), that outcome replaces the lost row.
ALTER TABLE call_failures ADD COLUMN call_id uuid;
UPDATE call_failures SET request_sent = CASE
    WHEN error_type = 'internal' THEN false
    WHEN status = 'failed' AND http_status IS NOT NULL THEN true
    WHEN status = 'lost' AND error_type = 'expired' THEN true
END;

-- Deleting a job deletes its call starts, as it does its chunks and events.
CREATE OR REPLACE FUNCTION carryover_delete_job_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chunks c USING deleted d WHERE c.job_id = d.id;
    DELETE FROM job_events e USING deleted d WHERE e.job_id = d.id;
    DELETE FROM background_calls b USING deleted d WHERE b.job_id = d.id;
    DELETE FROM call_starts s USING deleted d WHERE s.job_id = d.id;
    RETURN NULL;
END $$;

-- llm_calls gains request_sent (a chunk's call always reached the provider):
-- count(*) FILTER (WHERE request_sent) is the number of requests the
-- provider received, to hold against its invoice.
CREATE OR REPLACE VIEW llm_calls AS
SELECT c.job_id, c.seq, c.task_id, c.attempt, 'succeeded'::text AS status, j.model,
       c.previous_response_id, c.response_id, 200 AS http_status, NULL::text AS error_type, NULL::text AS error,
       c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.cost_usd, c.latency_ms,
       c.call_started_at AS started_at, c.created_at AS finished_at, true AS request_sent
FROM chunks c JOIN jobs j ON j.id = c.job_id
UNION ALL
SELECT f.job_id, f.seq, f.task_id, f.attempt, f.status, j.model,
       f.previous_response_id, f.response_id, f.http_status, f.error_type, f.error,
       f.input_tokens, f.cached_tokens, f.output_tokens, f.reasoning_tokens, f.cost_usd, f.latency_ms,
       f.started_at, f.finished_at, f.request_sent
FROM call_failures f JOIN jobs j ON j.id = f.job_id;

-- Daily cost counts calls the provider received: a delivery that stopped
-- before calling is an attempt of the chunk, not a call.
CREATE OR REPLACE VIEW daily_cost AS
SELECT date_trunc('day', c.finished_at)::date AS day, j.model, j.tenant_id, count(*) FILTER (WHERE c.request_sent IS NOT false) AS calls,
       count(*) FILTER (WHERE c.status <> 'succeeded' AND c.request_sent IS NOT false) AS unsuccessful_calls,
       sum(c.input_tokens) AS input_tokens, sum(c.cached_tokens) AS cached_tokens,
       sum(c.output_tokens) AS output_tokens, sum(c.reasoning_tokens) AS reasoning_tokens,
       sum(c.cost_usd) AS cost_usd
FROM llm_calls c JOIN jobs j ON j.id = c.job_id
GROUP BY 1, 2, 3;
