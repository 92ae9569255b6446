ALTER TABLE job_results ALTER COLUMN content SET COMPRESSION default, ALTER COLUMN metadata SET COMPRESSION default;
CREATE FUNCTION carryover_notify_watched_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_watchers WHERE job_id = NEW.job_id) THEN
        PERFORM pg_notify('carryover_jobs', NEW.job_id::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER chunks_notify AFTER INSERT ON chunks FOR EACH ROW EXECUTE FUNCTION carryover_notify_watched_job();
DROP TRIGGER jobs_delete_rows ON jobs;
DROP FUNCTION carryover_delete_job_rows();
DELETE FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id);
DELETE FROM job_events e WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id);
ALTER TABLE job_events ADD CONSTRAINT job_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE;
ALTER TABLE chunks ADD CONSTRAINT chunks_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON DELETE CASCADE;
