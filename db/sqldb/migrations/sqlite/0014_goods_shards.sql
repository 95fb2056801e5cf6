-- One hot item across several Redis shards: goods may split its stock into
-- this many buckets, each under its own hash tag (db/goods/shards.go); 1 is
-- one bucket, as every goods before this migration.
ALTER TABLE goods ADD COLUMN shards INTEGER NOT NULL DEFAULT 1 CHECK (shards BETWEEN 1 AND 8);
