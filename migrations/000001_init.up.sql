-- carryover schema: Postgres is the source of truth for every job, chunk,
-- model call, decision and result. Redis only ever carries job IDs.

-- Every job belongs to a tenant; API keys authenticate as one. Jobs made
-- with the Go client or the CLI belong to 'default' unless told otherwise.
CREATE TABLE tenants (
    id         text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenants (id) VALUES ('default');

-- Keys are stored only as SHA-256 hashes (they are 256-bit random, so a
-- fast hash is enough); the prefix identifies a key in lists and logs.
CREATE TABLE api_keys (
    id         bigserial PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES tenants(id),
    key_hash   text NOT NULL UNIQUE,
    prefix     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE TABLE jobs (
    id                uuid PRIMARY KEY,
    tenant_id         text NOT NULL DEFAULT 'default' REFERENCES tenants(id),
    status            text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued','running','merging','succeeded','partial','failed','cancelled')),
    model             text NOT NULL,
    format            text NOT NULL,
    instructions      text NOT NULL DEFAULT '',
    input             jsonb NOT NULL,              -- {"prompt": "..."} or {"messages": [...]}
    max_output_tokens integer NOT NULL,
    continuation      jsonb NOT NULL,              -- {"enabled", "max_attempts", "on_failure"}
    metadata          jsonb,                       -- the caller's, opaque
    webhook_url       text,                        -- POSTed a signed event when the job ends
    idempotency_key   text,                        -- unique per tenant (see below)
    request_hash      text NOT NULL,
    stop_reason       text,
    error             text,
    -- totals over the job's chunks, written when generation stops and at the
    -- merge (while a job runs, read them off its chunks)
    chunk_count       integer NOT NULL DEFAULT 0,
    input_tokens      bigint NOT NULL DEFAULT 0,
    cached_tokens     bigint NOT NULL DEFAULT 0,
    output_tokens     bigint NOT NULL DEFAULT 0,
    reasoning_tokens  bigint NOT NULL DEFAULT 0,
    cost_usd          numeric(18,8),               -- null when the model has no price
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(), -- last status change
    started_at        timestamptz,                 -- this execution's start (reset by a resume)
    active_ms         bigint NOT NULL DEFAULT 0,   -- time of earlier executions, before resumes
    finished_at       timestamptz
);
-- A job row is written only when its status changes: a chunk is one INSERT
-- into chunks and one commit, the least this design allows.
CREATE UNIQUE INDEX jobs_tenant_idempotency_key ON jobs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_status_created_idx ON jobs (status, created_at);
-- the reconciler's scan: only live jobs
CREATE INDEX jobs_live_idx ON jobs (created_at) WHERE status IN ('queued','running','merging');

-- One row per chunk, which is also the record of the model call that
-- produced it (see the llm_calls view for every attempt).
CREATE TABLE chunks (
    job_id            uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    seq               integer NOT NULL,
    content           text NOT NULL,
    content_sha       text NOT NULL,   -- sha256 of content, for the no-progress check
    finish_reason     text NOT NULL,   -- normalized: stop, length, tool_calls, content_filter, incomplete
    raw_status        text NOT NULL,   -- what the wire said (Responses status / Chat finish_reason)
    incomplete_reason text,            -- Responses incomplete_details.reason
    response_id       text,
    previous_response_id text,
    task_id           text,            -- the asynq task that made the call
    attempt           integer NOT NULL DEFAULT 0, -- that task's delivery number
    input_tokens      integer NOT NULL DEFAULT 0,
    cached_tokens     integer NOT NULL DEFAULT 0,
    output_tokens     integer NOT NULL DEFAULT 0,
    reasoning_tokens  integer NOT NULL DEFAULT 0,
    cost_usd          numeric(18,8),
    latency_ms        integer NOT NULL DEFAULT 0,
    call_started_at   timestamptz NOT NULL,
    cum_output_tokens bigint NOT NULL DEFAULT 0, -- output tokens of chunks 0..seq, for the token budget
    cum_cost_usd      numeric(18,8),               -- cost of chunks 0..seq, for the cost budget
    should_continue   boolean NOT NULL,
    stop_reason       text,            -- set on the chunk that ended the job's generation
    decision          jsonb NOT NULL,  -- every criterion's evaluation and the outcome
    pruned_at         timestamptz,     -- content removed by retention; the figures stay
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, seq)
);

-- Model call attempts that produced no chunk: failed calls, calls whose
-- worker died (lost: it may have cost money, the usage is unknown), and
-- deliveries that stopped before calling (error_type internal).
CREATE TABLE call_failures (
    id               bigserial PRIMARY KEY,
    job_id           uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    seq              integer NOT NULL,
    task_id          text,
    attempt          integer NOT NULL DEFAULT 0,
    counted          boolean NOT NULL DEFAULT true, -- false: a rate-limit wait (asynq does not count it)
    status           text NOT NULL CHECK (status IN ('failed','lost')),
    previous_response_id text,
    response_id      text,
    http_status      integer,
    error_type       text,
    error            text,
    input_tokens     integer,
    cached_tokens    integer,
    output_tokens    integer,
    reasoning_tokens integer,
    cost_usd         numeric(18,8),
    latency_ms       integer,
    started_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX call_failures_job_seq_idx ON call_failures (job_id, seq);

-- Every model call attempt, successful or not.
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

-- What every criterion said at every chunk, one row each: "why did job X stop,
-- and what did each criterion say at each chunk".
CREATE VIEW chunk_decisions AS
SELECT c.job_id, c.seq, c.finish_reason, c.should_continue, c.stop_reason,
       c.decision->>'decision' AS outcome, c.decision->>'resolved_by' AS resolved_by,
       e->>'criterion' AS criterion, e->>'decision' AS verdict, e->>'reason' AS reason,
       e->>'stop_reason' AS would_stop_as, e->'context' AS context, c.created_at
FROM chunks c CROSS JOIN LATERAL jsonb_array_elements(c.decision->'evaluations') e;

-- The job audit: one row per chunk with its call, usage, cost, finish reason
-- and decision.
CREATE VIEW job_audit AS
SELECT j.id AS job_id, j.tenant_id, j.model, j.format, j.status AS job_status, c.seq, c.task_id, c.attempt,
       c.response_id, c.previous_response_id, c.finish_reason, c.raw_status, c.incomplete_reason,
       c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.cost_usd, c.latency_ms,
       length(c.content) AS bytes, c.should_continue, c.decision->>'resolved_by' AS resolved_by, c.stop_reason,
       (SELECT count(*) FROM call_failures f WHERE f.job_id = c.job_id AND f.seq = c.seq) AS failed_attempts,
       c.call_started_at, c.created_at AS stored_at
FROM chunks c JOIN jobs j ON j.id = c.job_id;

-- Cost and tokens per day, model and tenant, over every attempt (failed
-- calls that reported usage were billed too).
CREATE VIEW daily_cost AS
SELECT date_trunc('day', c.finished_at)::date AS day, j.model, j.tenant_id, count(*) AS calls,
       count(*) FILTER (WHERE c.status <> 'succeeded') AS unsuccessful_calls,
       sum(c.input_tokens) AS input_tokens, sum(c.cached_tokens) AS cached_tokens,
       sum(c.output_tokens) AS output_tokens, sum(c.reasoning_tokens) AS reasoning_tokens,
       sum(c.cost_usd) AS cost_usd
FROM llm_calls c JOIN jobs j ON j.id = c.job_id
GROUP BY 1, 2, 3;

CREATE TABLE job_events (
    id         bigserial PRIMARY KEY,
    job_id     uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    seq        integer,
    level      text NOT NULL CHECK (level IN ('info','warn','error')),
    type       text NOT NULL,
    message    text NOT NULL,
    data       jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_events_job_idx ON job_events (job_id, id);

CREATE TABLE job_results (
    job_id        uuid PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    content       text NOT NULL,
    metadata      jsonb NOT NULL,
    cost_usd      numeric(18,8),
    merge_success boolean NOT NULL,
    merge_error   text,
    pruned_at     timestamptz,                     -- content removed by retention; metadata and cost stay
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Every webhook delivery attempt.
CREATE TABLE webhook_deliveries (
    id          bigserial PRIMARY KEY,
    job_id      uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    event_id    text NOT NULL,          -- the webhook-id header: the same on every retry
    event_type  text NOT NULL,
    attempt     integer NOT NULL,
    http_status integer,
    error       text,
    latency_ms  integer NOT NULL,
    delivered   boolean NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_job_idx ON webhook_deliveries (job_id, id);

-- USD per one million tokens. A model name matches its own row or any dated
-- snapshot of it ("gpt-4o" prices "gpt-4o-2024-08-06"); the latest row that
-- took effect on or before the call's day applies.
CREATE TABLE model_prices (
    model                 text NOT NULL,
    effective_from        date NOT NULL,
    input_per_mtok        numeric(12,6) NOT NULL,
    cached_input_per_mtok numeric(12,6),
    output_per_mtok       numeric(12,6) NOT NULL,
    source                text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, effective_from)
);

INSERT INTO model_prices (model, effective_from, input_per_mtok, cached_input_per_mtok, output_per_mtok, source) VALUES
    ('gpt-5',         '2025-08-07',  1.25, 0.125, 10.00, 'openai.com/api/pricing'),
    ('gpt-5-mini',    '2025-08-07',  0.25, 0.025,  2.00, 'openai.com/api/pricing'),
    ('gpt-5-nano',    '2025-08-07',  0.05, 0.005,  0.40, 'openai.com/api/pricing'),
    ('gpt-4.1',       '2025-04-14',  2.00, 0.50,   8.00, 'openai.com/api/pricing'),
    ('gpt-4.1-mini',  '2025-04-14',  0.40, 0.10,   1.60, 'openai.com/api/pricing'),
    ('gpt-4.1-nano',  '2025-04-14',  0.10, 0.025,  0.40, 'openai.com/api/pricing'),
    ('gpt-4o',        '2024-10-01',  2.50, 1.25,  10.00, 'openai.com/api/pricing'),
    ('gpt-4o-mini',   '2024-07-18',  0.15, 0.075,  0.60, 'openai.com/api/pricing'),
    ('o3',            '2025-06-10',  2.00, 0.50,   8.00, 'openai.com/api/pricing'),
    ('o4-mini',       '2025-04-16',  1.10, 0.275,  4.40, 'openai.com/api/pricing'),
    ('o3-mini',       '2025-01-31',  1.10, 0.55,   4.40, 'openai.com/api/pricing'),
    ('o1',            '2024-12-17', 15.00, 7.50,  60.00, 'openai.com/api/pricing');

-- Progress notifications for live streams: every event (status changes
-- included) notifies its job's ID on commit, and so does every chunk of a job
-- someone is watching. A transaction that notifies takes a global lock at
-- commit, so unwatched chunks — nearly all of them — do not. Listeners
-- re-read the tables, so a missed notification loses nothing.
CREATE UNLOGGED TABLE job_watchers (
    job_id  uuid NOT NULL,
    watcher uuid NOT NULL,
    since   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, watcher)
);
CREATE FUNCTION carryover_notify_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('carryover_jobs', NEW.job_id::text);
    RETURN NULL;
END $$;
CREATE FUNCTION carryover_notify_watched_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_watchers WHERE job_id = NEW.job_id) THEN
        PERFORM pg_notify('carryover_jobs', NEW.job_id::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER chunks_notify AFTER INSERT ON chunks FOR EACH ROW EXECUTE FUNCTION carryover_notify_watched_job();
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events FOR EACH ROW EXECUTE FUNCTION carryover_notify_job();
