-- Waiting rooms (goods of mode queue). One row per room: the seed that
-- shuffles the shoppers who joined before the start, chosen when the room
-- is made (the goods' creation, or the first need of goods made a queue by
-- an update) and kept here so a lost Redis shuffles with the same one; its
-- SHA-256 (seed_hash) is published from then on, the seed itself once the
-- start has passed (GET /api/goods/{id}/queue/room).
CREATE TABLE queue_rooms (
	goods_id   INTEGER PRIMARY KEY REFERENCES goods (id),
	seed       TEXT NOT NULL,
	seed_hash  TEXT NOT NULL,
	created_ms INTEGER NOT NULL
);

-- Priority codes of a waiting room: each admits the shopper who brings it
-- at once, once. Only the code's SHA-256 is kept (code_hash); used_by and
-- used_ms are set by the one UPDATE that spends it.
CREATE TABLE queue_codes (
	code_hash  TEXT PRIMARY KEY,
	goods_id   INTEGER NOT NULL REFERENCES goods (id),
	note       TEXT NOT NULL DEFAULT '',
	created_by INTEGER NOT NULL REFERENCES users (id),
	created_ms INTEGER NOT NULL,
	used_by    INTEGER,
	used_ms    INTEGER
);
CREATE INDEX queue_codes_goods ON queue_codes (goods_id);
