-- Raffles (goods of mode raffle). One row per raffle: its seed, secret
-- until the draw, and the seed's SHA-256 published from the raffle's
-- creation; the entries counted (each entry bumps it in its transaction,
-- and only while drawn_ms is NULL, so no entry slips in beside the draw);
-- the draw's marker and result, written in the draw's one transaction; and
-- the cursor of the draw's order that a unit passed on (an order expired or
-- cancelled) goes to next.
CREATE TABLE raffles (
	goods_id   BIGINT PRIMARY KEY REFERENCES goods (id),
	seed       TEXT NOT NULL,
	seed_hash  TEXT NOT NULL,
	entries    INTEGER NOT NULL DEFAULT 0,
	created_ms BIGINT NOT NULL,
	drawn_ms   BIGINT,
	winners    INTEGER NOT NULL DEFAULT 0,
	next_place INTEGER NOT NULL DEFAULT 0,
	passed     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX raffles_undrawn ON raffles (goods_id) WHERE drawn_ms IS NULL;

-- One row per shopper's entry: state entered (before the draw), won (an
-- order is or is about to be theirs: order_id), waitlisted (in the draw's
-- order after the winners) or lost (their order expired or was cancelled
-- and passed on, or the sale ended); place is the entry's place in the
-- draw's order (0 first). settled: won and paid, nothing left to watch.
CREATE TABLE raffle_entries (
	goods_id   BIGINT NOT NULL REFERENCES goods (id),
	user_id    BIGINT NOT NULL REFERENCES users (id),
	created_ms BIGINT NOT NULL,
	state      TEXT NOT NULL DEFAULT 'entered',
	place      INTEGER,
	order_id   BIGINT,
	settled    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (goods_id, user_id)
);
CREATE INDEX raffle_entries_place ON raffle_entries (goods_id, place);
CREATE INDEX raffle_entries_open ON raffle_entries (goods_id) WHERE state = 'won' AND settled = 0;
