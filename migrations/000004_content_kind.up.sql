-- The content type a continuation's prompt was written for (csv, json,
-- json_diffs, markdown, ...): for an auto or json job it is detected from
-- the request and the first chunk's opening, once, and every later chunk
-- reads it from the chunk before instead of reading the input and chunk 0
-- and detecting it again. Null for first chunks and chunks stored before.
ALTER TABLE chunks ADD COLUMN content_kind text;
