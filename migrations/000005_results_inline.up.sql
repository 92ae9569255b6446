-- A merged document and its metadata stay in the job_results row, compressed,
-- when they fit in it. With the default storage (extended) any value still
-- over 2 kB after compression moved to the TOAST table: a 40-chunk result
-- (a 9 kB document and 18 kB of metadata, about 4 kB each compressed) wrote
-- four TOAST rows and four TOAST index entries, a third of the merge's save.
-- Storage main compresses exactly as before and moves a value out of the row
-- only when the row would not fit in a page. No stored value changes; rows
-- written before keep their layout.
ALTER TABLE job_results ALTER COLUMN content SET STORAGE MAIN, ALTER COLUMN metadata SET STORAGE MAIN;
