-- Red packet times become unix milliseconds in INTEGER columns named *_ms,
-- as goods' are: redpackets.expires_at and created_at and
-- redpacket_shares.grabbed_at were text in one fixed-width UTC layout with
-- milliseconds (2006-01-02T15:04:05.000Z), the only form the code wrote.
--
-- Both tables are rebuilt. The old ones are renamed first, which points the
-- shares' foreign key at the old packets; the new tables are created under
-- the final names, filled parent first, and the old ones dropped child
-- first, so no foreign key is ever left dangling while foreign keys are on
-- (they cannot be turned off inside the migration's transaction). Indexes
-- are created once the old ones have gone with their tables. The
-- AUTOINCREMENT counter carries over, so no packet ID (and so no expiry task
-- ID) is ever reused, not even one of a packet discarded at creation.

ALTER TABLE redpackets RENAME TO redpackets_old;
ALTER TABLE redpacket_shares RENAME TO redpacket_shares_old;

-- Red packets: a merchant's total split into shares at creation.
CREATE TABLE redpackets (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	owner_id       INTEGER NOT NULL REFERENCES users (id),
	title          TEXT NOT NULL,
	total_cents    INTEGER NOT NULL CHECK (total_cents > 0),
	count          INTEGER NOT NULL CHECK (count BETWEEN 1 AND 100000),
	mode           TEXT NOT NULL CHECK (mode IN ('random', 'fixed')),
	status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'finished', 'expired')),
	claimed_count  INTEGER NOT NULL DEFAULT 0, -- shares whose claim has been flushed
	refunded_cents INTEGER NOT NULL DEFAULT 0,
	expires_ms     INTEGER NOT NULL,
	created_ms     INTEGER NOT NULL
);

-- One row per share, in grab order; the claim columns are filled by the batch
-- flush, refunded by the expiry. A user holds at most one share of a packet.
CREATE TABLE redpacket_shares (
	redpacket_id INTEGER NOT NULL REFERENCES redpackets (id) ON DELETE CASCADE,
	seq          INTEGER NOT NULL,
	amount_cents INTEGER NOT NULL CHECK (amount_cents >= 1),
	user_id      INTEGER REFERENCES users (id),
	grabbed_ms   INTEGER,
	refunded     INTEGER NOT NULL DEFAULT 0 CHECK (refunded IN (0, 1)),
	PRIMARY KEY (redpacket_id, seq),
	CHECK (NOT (refunded = 1 AND user_id IS NOT NULL))
) WITHOUT ROWID;

-- julianday reads the layout the old code wrote (and any RFC 3339 form),
-- keeping whole milliseconds as time.UnixMilli does; ROUND undoes the
-- floating point of its answer. A text it cannot read is NULL and fails the
-- NOT NULL of the packet's times: the migration stops rather than invent a
-- time. An unclaimed share's NULL stays NULL.
INSERT INTO redpackets (id, owner_id, title, total_cents, count, mode, status, claimed_count, refunded_cents, expires_ms, created_ms)
	SELECT id, owner_id, title, total_cents, count, mode, status, claimed_count, refunded_cents,
		CAST(ROUND((julianday(expires_at) - 2440587.5) * 86400000) AS INTEGER),
		CAST(ROUND((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER)
	FROM redpackets_old;
INSERT INTO redpacket_shares (redpacket_id, seq, amount_cents, user_id, grabbed_ms, refunded)
	SELECT redpacket_id, seq, amount_cents, user_id,
		CAST(ROUND((julianday(grabbed_at) - 2440587.5) * 86400000) AS INTEGER),
		refunded
	FROM redpacket_shares_old;

DELETE FROM sqlite_sequence WHERE name = 'redpackets';
INSERT INTO sqlite_sequence (name, seq)
	SELECT 'redpackets', seq FROM sqlite_sequence WHERE name = 'redpackets_old';

DROP TABLE redpacket_shares_old;
DROP TABLE redpackets_old;

CREATE INDEX redpackets_owner ON redpackets (owner_id, id);
CREATE INDEX redpackets_status ON redpackets (status, expires_ms);
CREATE UNIQUE INDEX redpacket_shares_user ON redpacket_shares (redpacket_id, user_id) WHERE user_id IS NOT NULL;
