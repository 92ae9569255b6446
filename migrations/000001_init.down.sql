DROP TRIGGER IF EXISTS chunks_notify ON chunks;
DROP TRIGGER IF EXISTS job_events_notify ON job_events;
DROP FUNCTION IF EXISTS carryover_notify_job(), carryover_notify_watched_job();
DROP TABLE IF EXISTS job_watchers;
DROP VIEW IF EXISTS daily_cost, job_audit, chunk_decisions, llm_calls;
DROP TABLE IF EXISTS webhook_deliveries, model_prices, job_results, job_events, call_failures, chunks, jobs, api_keys, tenants;
