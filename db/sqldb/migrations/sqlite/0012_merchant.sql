-- Merchants end and hide their sales, and give goods a picture.
-- ended_ms: when the merchant ended the slot or goods early (NULL: it runs
-- its planned window). Ending a slot also moves its end_ms to that minute, so
-- every query of windows sees it over; ending one goods closes its window alone.
-- hidden: 1 hides the slot or goods from shoppers (pages and API answer 404,
-- grabs are refused); the owner still sees it, marked hidden.
ALTER TABLE slots ADD COLUMN ended_ms INTEGER;
ALTER TABLE slots ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
ALTER TABLE goods ADD COLUMN ended_ms INTEGER;
ALTER TABLE goods ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
-- image: the hash of the goods' picture in images ('' for none).
ALTER TABLE goods ADD COLUMN image TEXT NOT NULL DEFAULT '';

-- Product pictures, content-addressed (hash is the hex SHA-256 of data), in
-- the durable store so every web process on every host serves them.
CREATE TABLE images (
	hash         TEXT PRIMARY KEY,
	content_type TEXT NOT NULL,
	data         BLOB NOT NULL,
	created_ms   INTEGER NOT NULL
);
