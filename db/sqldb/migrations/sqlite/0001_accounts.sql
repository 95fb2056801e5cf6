-- Accounts: shoppers, merchants and admins.
CREATE TABLE users (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	username      TEXT NOT NULL UNIQUE COLLATE NOCASE,
	password_hash TEXT NOT NULL,
	role          TEXT NOT NULL CHECK (role IN ('user', 'merchant', 'admin')),
	email         TEXT NOT NULL DEFAULT '',
	webhook_url   TEXT NOT NULL DEFAULT '',
	created_at    TEXT NOT NULL
);
