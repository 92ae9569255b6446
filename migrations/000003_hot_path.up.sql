-- The chunk save is the statement every chunk pays for, and three things on
-- it cost Postgres more CPU than the insert itself (measured per save: a
-- foreign-key check on chunks ~22 µs, one on job_events ~20 µs, the
-- per-row watcher trigger ~25 µs, against ~90 µs for the insert).

-- 1. Chunks and events keep their jobs without foreign keys. Each FK check
--    ran a query and took a row lock on the job (itself a WAL record) for
--    every row; the worker only ever writes a chunk or an event for a job it
--    has just read under the job's lock, so the check could never fail.
--    Deleting a job still deletes its chunks and events, as ON DELETE
--    CASCADE did: one statement-level trigger per DELETE on jobs.
ALTER TABLE chunks DROP CONSTRAINT chunks_job_id_fkey;
ALTER TABLE job_events DROP CONSTRAINT job_events_job_id_fkey;
CREATE FUNCTION carryover_delete_job_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chunks c USING deleted d WHERE c.job_id = d.id;
    DELETE FROM job_events e USING deleted d WHERE e.job_id = d.id;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_delete_rows AFTER DELETE ON jobs REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION carryover_delete_job_rows();

-- 2. A chunk of a watched job notifies from its save's transaction (see the
--    lock session in internal/store), not from a plpgsql trigger run for
--    every chunk whether anyone watches or not.
DROP TRIGGER chunks_notify ON chunks;
DROP FUNCTION carryover_notify_watched_job();

-- 3. Results compress with lz4 where the server has it: a merged document
--    and its metadata are tens of kilobytes, and pglz spent more CPU on them
--    than the rest of the merge's statements.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE job_results ALTER COLUMN content SET COMPRESSION lz4, ALTER COLUMN metadata SET COMPRESSION lz4;
    END IF;
END $$;
