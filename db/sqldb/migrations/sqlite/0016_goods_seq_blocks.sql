-- Order sequences reserved in blocks (db/goods/seq_blocks.go): a bucket's
-- grab script issues sequences only up to the ceiling recorded here first,
-- so a bucket loaded again after Redis lost it starts above every sequence
-- it may have issued, and no order ID is given to two shoppers.
CREATE TABLE goods_seq_blocks (
	goods_id INTEGER NOT NULL REFERENCES goods (id),
	bucket   INTEGER NOT NULL,
	ceiling  INTEGER NOT NULL,
	PRIMARY KEY (goods_id, bucket)
);
