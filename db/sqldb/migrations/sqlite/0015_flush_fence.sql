-- The flush's fencing token (db/backend/lease.go): each holder of the flush
-- lease takes the next number, and a batch commits only while the number is
-- still its holder's, so a flusher that lost its lease (paused past it)
-- cannot apply a stale batch after its successor has started.
CREATE TABLE flush_fences (
	name  TEXT PRIMARY KEY,
	fence INTEGER NOT NULL
);
INSERT INTO flush_fences (name, fence) VALUES ('flush', 0);
