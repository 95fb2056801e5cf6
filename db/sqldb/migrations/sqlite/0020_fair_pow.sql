-- Fair sales: a proof of work asked of each grab (pow_bits leading zero
-- bits, 0: none), and goods open only to shoppers who booked a reminder.
ALTER TABLE goods ADD COLUMN pow_bits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE goods ADD COLUMN preregistered_only INTEGER NOT NULL DEFAULT 0;
