-- Raffles that cannot be steered (docs/FAIR_SALES.md "Raffle").
-- seed_sealed: the seed under AES-256-GCM with a key derived from the
-- server's secret (fair/raffle_seal.go); seed stays '' until the draw
-- reveals it. Raffles opened before this migration keep their seed in
-- seed (readable, as it always was): their draw reads it from there.
-- entries_root: the entries' Merkle root, frozen once when entries close
-- (no entry is added after it). beacon_round: the public beacon's round
-- named when the raffle opened (NULL: no beacon); beacon: that round's
-- randomness, and randomness: SHA-256(seed:entries_root[:beacon]), both
-- written by the draw. Raffles drawn before this migration were ordered by
-- the seed itself: their randomness is their seed.
ALTER TABLE raffles ADD COLUMN seed_sealed TEXT;
ALTER TABLE raffles ADD COLUMN entries_root TEXT;
ALTER TABLE raffles ADD COLUMN beacon_round INTEGER;
ALTER TABLE raffles ADD COLUMN beacon TEXT;
ALTER TABLE raffles ADD COLUMN randomness TEXT;
UPDATE raffles SET randomness = seed WHERE drawn_ms IS NOT NULL;
