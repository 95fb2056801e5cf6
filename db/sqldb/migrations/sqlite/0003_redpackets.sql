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
	expires_at     TEXT NOT NULL,
	created_at     TEXT NOT NULL
);
CREATE INDEX redpackets_owner ON redpackets (owner_id, id);
CREATE INDEX redpackets_status ON redpackets (status, expires_at);

-- One row per share, in grab order; the claim columns are filled by the batch
-- flush, refunded by the expiry. A user holds at most one share of a packet.
CREATE TABLE redpacket_shares (
	redpacket_id INTEGER NOT NULL REFERENCES redpackets (id) ON DELETE CASCADE,
	seq          INTEGER NOT NULL,
	amount_cents INTEGER NOT NULL CHECK (amount_cents >= 1),
	user_id      INTEGER REFERENCES users (id),
	grabbed_at   TEXT,
	refunded     INTEGER NOT NULL DEFAULT 0 CHECK (refunded IN (0, 1)),
	PRIMARY KEY (redpacket_id, seq),
	CHECK (NOT (refunded = 1 AND user_id IS NOT NULL))
) WITHOUT ROWID;
CREATE UNIQUE INDEX redpacket_shares_user ON redpacket_shares (redpacket_id, user_id) WHERE user_id IS NOT NULL;
