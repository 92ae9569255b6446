DROP VIEW background_in_flight;
CREATE OR REPLACE FUNCTION carryover_delete_job_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM chunks c USING deleted d WHERE c.job_id = d.id;
    DELETE FROM job_events e USING deleted d WHERE e.job_id = d.id;
    RETURN NULL;
END $$;
DROP TABLE background_calls;
