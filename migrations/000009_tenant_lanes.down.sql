ALTER TABLE tenants DROP COLUMN ordinal;
