DROP INDEX IF EXISTS jobs_tenant_status_created_idx;
DROP INDEX IF EXISTS jobs_tenant_created_idx;
