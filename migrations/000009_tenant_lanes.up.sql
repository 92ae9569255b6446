-- Fair chunk work across tenants: each tenant's chunk tasks go to a queue
-- lane of its own (lane = ordinal mod the worker's lane count), so one
-- tenant's backlog does not queue in front of another's next chunk. The
-- ordinal is given once, in creation order, so the first N tenants get N
-- different lanes ('default' gets 0: its tasks stay on the chunk queue
-- itself, lane 0).
ALTER TABLE tenants ADD COLUMN ordinal bigint;
UPDATE tenants t SET ordinal = o.n
FROM (SELECT id, row_number() OVER (ORDER BY id <> 'default', created_at, id) - 1 AS n FROM tenants) o
WHERE o.id = t.id;
CREATE SEQUENCE tenants_ordinal_seq MINVALUE 0 OWNED BY tenants.ordinal;
SELECT setval('tenants_ordinal_seq', coalesce((SELECT max(ordinal) + 1 FROM tenants), 0), false);
ALTER TABLE tenants
    ALTER COLUMN ordinal SET DEFAULT nextval('tenants_ordinal_seq'),
    ALTER COLUMN ordinal SET NOT NULL,
    ADD CONSTRAINT tenants_ordinal_key UNIQUE (ordinal);
