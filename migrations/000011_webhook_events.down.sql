DROP TRIGGER IF EXISTS jobs_webhook_event ON jobs;
DROP FUNCTION IF EXISTS carryover_webhook_event();
DROP FUNCTION IF EXISTS carryover_webhook_body(jobs, timestamptz);
DROP TABLE IF EXISTS webhook_events;
