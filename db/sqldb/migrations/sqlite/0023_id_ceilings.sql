-- IDs reserved in blocks below a ceiling recorded here first (db/backend/
-- ceilings.go), so that no ID acknowledged to one shopper goes to another
-- when Redis rolls back (a failover without the master's last writes, or a
-- Redis that lost its data): one row per run of IDs, named by its kind, its
-- item and its part of the item. kind 'goods': a goods bucket's order
-- sequences (part: the bucket); 'redpacket': a red packet's share seqs;
-- 'coupon': a coupon template's units (part 0 for both). No foreign key: the
-- items live in the tables of several areas.
CREATE TABLE id_ceilings (
	kind    TEXT NOT NULL,
	item_id INTEGER NOT NULL,
	part    INTEGER NOT NULL,
	ceiling INTEGER NOT NULL,
	PRIMARY KEY (kind, item_id, part)
);
INSERT INTO id_ceilings (kind, item_id, part, ceiling) SELECT 'goods', goods_id, bucket, ceiling FROM goods_seq_blocks;
INSERT INTO id_ceilings (kind, item_id, part, ceiling) SELECT kind, item_id, 0, ceiling FROM issue_ceilings;
DROP TABLE goods_seq_blocks;
DROP TABLE issue_ceilings;
