DROP VIEW IF EXISTS chunk_decisions, llm_calls;
DROP TABLE IF EXISTS model_prices, job_results, job_events, call_failures, chunks, jobs, api_keys, tenants;
