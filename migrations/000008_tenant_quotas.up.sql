-- Per-tenant quotas. NULL takes the operator's setting (CARRYOVER_TENANT_MAX_JOBS,
-- CARRYOVER_TENANT_DAILY_USD); a value overrides it for the tenant. There is no
-- "unlimited" value: set a large one (max_jobs_in_flight = 2147483647).
ALTER TABLE tenants
    ADD COLUMN max_jobs_in_flight integer CHECK (max_jobs_in_flight > 0),
    ADD COLUMN daily_spend_usd    numeric(18,8) CHECK (daily_spend_usd > 0);

-- The quota check at every new job counts the tenant's live jobs, and sums
-- the spend of its jobs live or changed today.
CREATE INDEX jobs_tenant_live_idx ON jobs (tenant_id) WHERE status IN ('queued','running','merging');
CREATE INDEX jobs_tenant_updated_idx ON jobs (tenant_id, updated_at);
