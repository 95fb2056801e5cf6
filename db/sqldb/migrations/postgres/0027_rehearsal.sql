-- Rehearsals: a slot made with rehearsal = 1 runs the whole sale path but
-- its orders never count in revenue, the exports, the orders desk or the
-- inbox, and DELETE /api/admin/slots/{id} may remove it with all it made.
-- A slot is a rehearsal from its creation to its end: the flag never changes.
ALTER TABLE slots ADD COLUMN rehearsal INTEGER NOT NULL DEFAULT 0;
