-- The language an account reads the shop in ('' until it picks one: the
-- browser's Accept-Language decides). Kept per account so that a shopper
-- who picked Chinese on one device reads Chinese on the next after signing in.
ALTER TABLE users ADD COLUMN locale TEXT NOT NULL DEFAULT '';
