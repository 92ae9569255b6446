-- A detached model call (the Responses API's background mode): its response
-- id is committed here before anyone waits on it, so a delivery that finds
-- the row resumes that response instead of paying for a new one. One row per
-- created response. A row is open (closed_at NULL) while its response may
-- still become the chunk; the chunk's own row (same response_id) is the
-- record of one that did. A row is closed when its response will never be a
-- chunk: failed, cancelled, expired before it was read (404), or replaced by
-- a call with a larger budget after it spent its own on reasoning.
CREATE TABLE background_calls (
    response_id       text PRIMARY KEY,
    job_id            uuid NOT NULL,
    seq               integer NOT NULL,
    task_id           text,
    attempt           integer NOT NULL DEFAULT 0,
    max_output_tokens integer,
    created_at        timestamptz NOT NULL DEFAULT now(),
    -- The status the last poll saw (queued, in_progress), then why it closed
    -- (completed, incomplete, failed, cancelled, expired, replaced).
    status            text NOT NULL DEFAULT 'queued',
    polls             integer NOT NULL DEFAULT 0, -- polls that found it unfinished
    resumes           integer NOT NULL DEFAULT 0, -- deliveries after a crash that picked it up
    last_polled_at    timestamptz,
    closed_at         timestamptz
);
CREATE INDEX background_calls_open_idx ON background_calls (job_id, seq) WHERE closed_at IS NULL;
-- What recent calls of an output budget took, for a worker that has not
-- seen one yet (Store.RecentLatency).
CREATE INDEX background_calls_recent_idx ON background_calls (max_output_tokens, created_at);

-- Deleting a job deletes its background calls, as it does its chunks and events.
CREATE OR REPLACE FUNCTION carryover_delete_job_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chunks c USING deleted d WHERE c.job_id = d.id;
    DELETE FROM job_events e USING deleted d WHERE e.job_id = d.id;
    DELETE FROM background_calls b USING deleted d WHERE b.job_id = d.id;
    RETURN NULL;
END $$;

-- Background calls that have not become a chunk and are not closed, with
-- the status their last poll saw: what is in flight at the provider now.
CREATE VIEW background_in_flight AS
SELECT b.* FROM background_calls b
WHERE b.closed_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.job_id = b.job_id AND c.seq = b.seq);
