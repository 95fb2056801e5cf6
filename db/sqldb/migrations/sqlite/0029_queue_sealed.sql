-- A waiting room's seed is kept sealed until the start, as a raffle's is
-- (db/fair/raffle/seal.go, purpose "queue"): seed_sealed holds it under
-- AES-256-GCM with a key derived from the server's secret, and seed is
-- empty, so a copy of the store (a backup, a replica, a read-only account)
-- does not tell it while places can still be timed against it. Rooms made
-- before keep their seed readable in seed.
ALTER TABLE queue_rooms ADD COLUMN seed_sealed TEXT;
