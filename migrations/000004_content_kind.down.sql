ALTER TABLE chunks DROP COLUMN content_kind;
