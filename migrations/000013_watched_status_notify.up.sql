-- A job's events (its status changes, warnings, failures) notify
-- carryover_jobs only when someone watches the job (a row in job_watchers),
-- as its chunks already did. Every process LISTENs through its hub, and the
-- hub registers a job_watchers row before it subscribes anyone, so no
-- listener loses a notification it could receive; the streams keep their
-- re-read every few seconds for the one race (a watcher registered between
-- the check and the commit).
--
-- Why: Postgres serializes the commits of all transactions that NOTIFY
-- (a database-wide lock held from before the commit until after its WAL
-- flush), so every job start, stop and end — each writes a status event —
-- queued behind every other for its flush. In the in-flight benchmark
-- (10,000 jobs) the worker's lock session spent more of its time waiting on
-- that lock than on any statement, and every claim and save waits on the
-- lock session.
CREATE OR REPLACE FUNCTION carryover_notify_watched_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM job_watchers WHERE job_id = NEW.job_id) THEN
        PERFORM pg_notify('carryover_jobs', NEW.job_id::text);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS job_events_notify ON job_events;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events FOR EACH ROW
    WHEN (NEW.type <> 'decision') EXECUTE FUNCTION carryover_notify_watched_event();
