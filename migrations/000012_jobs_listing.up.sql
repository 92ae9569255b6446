-- GET /v1/jobs lists a tenant's jobs newest first, by keyset pagination on
-- (created_at, id): one index for the whole listing, one for a listing of
-- one status (the status filter), so a page is an index range scan however
-- many jobs the tenant has.
CREATE INDEX IF NOT EXISTS jobs_tenant_created_idx ON jobs (tenant_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS jobs_tenant_status_created_idx ON jobs (tenant_id, status, created_at DESC, id DESC);
