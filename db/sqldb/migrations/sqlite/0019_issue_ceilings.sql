-- Red packet shares and coupon units reserved in blocks (db/redpacket/
-- ceiling.go, db/coupon/ceiling.go): a grab script gives a share or a unit
-- only up to the ceiling recorded here first, so after a failover rolled
-- its counters back (or Redis lost it), it starts above every share or unit
-- the lost node may have acknowledged, and none goes to two shoppers.
CREATE TABLE issue_ceilings (
	kind    TEXT NOT NULL, -- 'redpacket' (share seq) or 'coupon' (unit)
	item_id INTEGER NOT NULL,
	ceiling INTEGER NOT NULL,
	PRIMARY KEY (kind, item_id)
);
