-- Fair sales: how a goods is sold. mode is first_come (a race), queue (a
-- waiting room admitting queue_rate shoppers a second, 0: the server's
-- measured capacity, each admission good for admission_seconds) or raffle
-- (entries from entry_start_ms to the slot's start, then a draw).
ALTER TABLE goods ADD COLUMN mode TEXT NOT NULL DEFAULT 'first_come';
ALTER TABLE goods ADD COLUMN queue_rate INTEGER NOT NULL DEFAULT 0;
ALTER TABLE goods ADD COLUMN admission_seconds INTEGER NOT NULL DEFAULT 120;
ALTER TABLE goods ADD COLUMN entry_start_ms BIGINT;
