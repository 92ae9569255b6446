DROP TRIGGER IF EXISTS job_events_notify ON job_events;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events FOR EACH ROW
    WHEN (NEW.type <> 'decision') EXECUTE FUNCTION carryover_notify_job();
DROP FUNCTION IF EXISTS carryover_notify_watched_event();
