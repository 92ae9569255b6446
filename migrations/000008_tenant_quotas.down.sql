DROP INDEX IF EXISTS jobs_tenant_updated_idx;
DROP INDEX IF EXISTS jobs_tenant_live_idx;
ALTER TABLE tenants DROP COLUMN IF EXISTS daily_spend_usd, DROP COLUMN IF EXISTS max_jobs_in_flight;
