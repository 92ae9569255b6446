DROP TABLE IF EXISTS model_prices, job_results, job_events, chunks, llm_calls, jobs;
