-- Webhook events, each written once, in the transaction of the status change
-- that causes it, and delivered as written. Before this, an event's id was
-- evt_<job>_<status> (two partial endings of a resumed job shared it, and
-- receivers that drop duplicates lost the second), and its body was built
-- from the job row at each delivery attempt (a retry could describe a later
-- state, with a new timestamp).
--
-- The webhook-id header is the event's id: unique per event, the same on
-- every retry. The body is the exact bytes POSTed on every attempt; its
-- timestamp is the event's. The webhook-timestamp header (signed with the id
-- and the body) is the attempt's, as the Standard Webhooks spec has it for
-- replay protection. Events stay as long as their job (they hold no document
-- text, so retention leaves them).
CREATE TABLE webhook_events (
    id           text PRIMARY KEY,
    job_id       uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    type         text NOT NULL,                    -- job.succeeded, job.partial, job.failed, job.cancelled
    body         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(), -- the event's time, the body's timestamp
    delivered_at timestamptz                       -- the first 2xx answer
);
CREATE INDEX webhook_events_job_idx ON webhook_events (job_id, created_at);
-- the reconciler's scan for events whose delivery task went missing
CREATE INDEX webhook_events_pending_idx ON webhook_events (created_at) WHERE delivered_at IS NULL;

-- The body of job j's end event at time at (the one definition of the
-- payload; jobs.Event in Go decodes it). result is there only when the job
-- has a result to read (a cancelled or failed job without one would answer
-- 409); job always answers. metadata echoes the caller's.
CREATE FUNCTION carryover_webhook_body(j jobs, at timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
SELECT jsonb_build_object(
    'type', 'job.' || j.status,
    'timestamp', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'data', jsonb_build_object('id', j.id, 'tenant', j.tenant_id, 'status', j.status, 'chunks', j.chunk_count,
                               'cost_usd', j.cost_usd::float8, 'metadata', j.metadata, 'job', '/v1/jobs/' || j.id)
        || CASE WHEN j.stop_reason IS NULL THEN '{}' ELSE jsonb_build_object('stop_reason', j.stop_reason) END
        || CASE WHEN j.error IS NULL THEN '{}' ELSE jsonb_build_object('error', j.error) END
        || CASE WHEN EXISTS (SELECT 1 FROM job_results r WHERE r.job_id = j.id)
                THEN jsonb_build_object('result', '/v1/jobs/' || j.id || '/result') ELSE '{}' END
)::text
$$;

CREATE FUNCTION carryover_webhook_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_events (id, job_id, type, body, created_at)
    VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), NEW.id, 'job.' || NEW.status,
            carryover_webhook_body(NEW, now()), now());
    RETURN NULL;
END $$;

-- Every statement that ends a job (merge, stop, fail, cancel) writes its
-- event here, in its own transaction, whichever process runs it. An AFTER
-- trigger runs once the statement is done, so it sees the result the same
-- statement stored.
CREATE TRIGGER jobs_webhook_event AFTER UPDATE OF status ON jobs FOR EACH ROW
    WHEN (NEW.status IN ('succeeded','partial','failed','cancelled') AND OLD.status IS DISTINCT FROM NEW.status
          AND NEW.webhook_url IS NOT NULL)
    EXECUTE FUNCTION carryover_webhook_event();
