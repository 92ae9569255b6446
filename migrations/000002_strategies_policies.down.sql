DROP VIEW job_audit;
CREATE VIEW job_audit AS
SELECT j.id AS job_id, j.tenant_id, j.model, j.format, j.status AS job_status, c.seq, c.task_id, c.attempt,
       c.response_id, c.previous_response_id, c.finish_reason, c.raw_status, c.incomplete_reason,
       c.input_tokens, c.cached_tokens, c.output_tokens, c.reasoning_tokens, c.cost_usd, c.latency_ms,
       length(c.content) AS bytes, c.should_continue, c.decision->>'resolved_by' AS resolved_by, c.stop_reason,
       (SELECT count(*) FROM call_failures f WHERE f.job_id = c.job_id AND f.seq = c.seq) AS failed_attempts,
       c.call_started_at, c.created_at AS stored_at
FROM chunks c JOIN jobs j ON j.id = c.job_id;
DROP TRIGGER job_events_notify ON job_events;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events FOR EACH ROW EXECUTE FUNCTION carryover_notify_job();
DELETE FROM job_events WHERE type = 'decision';
ALTER TABLE chunks DROP COLUMN strategy, DROP COLUMN prompt, DROP COLUMN max_output_tokens, DROP COLUMN tool_calls,
    DROP COLUMN cum_records, DROP COLUMN in_quote, DROP COLUMN stream_broken;
ALTER TABLE jobs DROP COLUMN options;
