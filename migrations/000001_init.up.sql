-- carryover schema: Postgres is the source of truth for every job, chunk,
-- model call, decision and result. Redis only ever carries job IDs.

CREATE TABLE jobs (
    id                uuid PRIMARY KEY,
    status            text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued','running','merging','succeeded','partial','failed','cancelled')),
    model             text NOT NULL,
    format            text NOT NULL,
    instructions      text NOT NULL DEFAULT '',
    input             jsonb NOT NULL,              -- {"prompt": "..."} or {"messages": [...]}
    max_output_tokens integer NOT NULL,
    continuation      jsonb NOT NULL,              -- {"enabled", "max_attempts", "on_failure"}
    metadata          jsonb,                       -- the caller's, opaque
    idempotency_key   text UNIQUE,
    request_hash      text NOT NULL,
    -- progress, written by the chunk task
    next_seq          integer NOT NULL DEFAULT 0,  -- chunks stored so far
    last_response_id  text,
    last_finish_reason text,
    last_chunk_sha    text,                        -- sha256 of the last chunk, for the no-progress check
    input_tokens      bigint NOT NULL DEFAULT 0,
    cached_tokens     bigint NOT NULL DEFAULT 0,
    output_tokens     bigint NOT NULL DEFAULT 0,
    reasoning_tokens  bigint NOT NULL DEFAULT 0,
    cost_usd          numeric(18,8),               -- null while the model has no price
    stop_reason       text,
    error             text,
    -- a lease so two deliveries of one task never both call the model
    lease_token       uuid,
    lease_until       timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz
) WITH (fillfactor = 70);
-- Every chunk updates its job's progress columns. None of them is indexed and
-- the pages keep free space, so those updates are HOT (no index writes); only
-- the rare status changes touch the indexes.
CREATE INDEX jobs_status_created_idx ON jobs (status, created_at);
-- the reconciler's scan: only live jobs (few), filtered on updated_at
CREATE INDEX jobs_live_idx ON jobs (created_at) WHERE status IN ('queued','running','merging');

CREATE TABLE llm_calls (
    id               bigserial PRIMARY KEY,
    job_id           uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    seq              integer NOT NULL,
    attempt          integer NOT NULL,           -- asynq delivery number for this chunk, from 0
    model            text NOT NULL,
    api              text NOT NULL DEFAULT 'responses',
    status           text NOT NULL DEFAULT 'in_flight'
                     CHECK (status IN ('in_flight','succeeded','failed','lost')),
    previous_response_id text,
    response_id      text,
    http_status      integer,
    error_type       text,
    error            text,
    input_tokens     integer,
    cached_tokens    integer,
    output_tokens    integer,
    reasoning_tokens integer,
    latency_ms       integer,
    started_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
) WITH (fillfactor = 80);  -- room for the HOT update that completes each call
CREATE INDEX llm_calls_job_seq_idx ON llm_calls (job_id, seq);

CREATE TABLE chunks (
    job_id            uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    seq               integer NOT NULL,
    content           text NOT NULL,
    finish_reason     text NOT NULL,   -- normalized: stop, length, tool_calls, content_filter, incomplete, error, malformed
    raw_status        text NOT NULL,   -- what the wire said (Responses status / Chat finish_reason)
    incomplete_reason text,            -- Responses incomplete_details.reason
    response_id       text,
    call_id           bigint REFERENCES llm_calls(id),
    input_tokens      integer NOT NULL DEFAULT 0,
    cached_tokens     integer NOT NULL DEFAULT 0,
    output_tokens     integer NOT NULL DEFAULT 0,
    reasoning_tokens  integer NOT NULL DEFAULT 0,
    cost_usd          numeric(18,8),
    latency_ms        integer NOT NULL DEFAULT 0,
    should_continue   boolean NOT NULL,
    stop_reason       text,            -- set on the chunk that ended the job's generation
    decision          jsonb NOT NULL,  -- every criterion's evaluation and the outcome
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, seq)
);

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
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

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
