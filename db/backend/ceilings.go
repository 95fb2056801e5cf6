package backend

import (
	"context"
	"database/sql"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Issue ceilings keep an ID acknowledged to one shopper from being issued to
// another when Redis rolls back (a replica promoted without its master's
// last writes, REDIS_WAIT_REPLICAS=0, or a Redis that lost its data): an
// area's script issues units (red packet shares, coupon units) only below a
// ceiling the durable store recorded first (issue_ceilings, one row per
// kind and item), reserved a block at a time. On a Redis Cluster the item's
// Redis state also records the node that issues (CLUSTER MYID, when the
// scripts' cluster flag is "1"), so a script on another node knows that the
// units up to the durable ceiling may have been issued there. Goods orders
// do the same with their own per-bucket table (db/goods/seq_blocks.go).

// IssueBlock is how many units of n an item reserves at a time: a twentieth
// (at most 1000), what a failover may leave unsold.
func IssueBlock(n int64) int64 { return max(1, min(n/20, 1000)) }

// ClusterFlag is the scripts' ARGV saying whether to check the node that
// issues an item's units: "1" on a Redis Cluster, "" on one server (which
// has no replica to fail over to).
func (b *Backend) ClusterFlag() string {
	if _, ok := b.Redis.(*redis.ClusterClient); ok {
		return "1"
	}
	return ""
}

// IssueCeiling is the ceiling the store recorded for an item of kind: the
// units below it may have been issued (0: none yet).
func (b *Backend) IssueCeiling(ctx context.Context, kind string, id int64) (int64, error) {
	var c int64
	err := b.SQL.R.QueryRowContext(ctx, `SELECT ceiling FROM issue_ceilings WHERE kind = ? AND item_id = ?`, kind, id).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return c, err
}

// RaiseIssueCeiling records ceiling for an item of kind unless a higher one
// is recorded, and returns the one recorded: a ceiling never falls.
func (b *Backend) RaiseIssueCeiling(ctx context.Context, kind string, id, ceiling int64) (int64, error) {
	err := b.SQL.W.QueryRowContext(ctx, `INSERT INTO issue_ceilings (kind, item_id, ceiling) VALUES (?, ?, ?)
		ON CONFLICT (kind, item_id) DO UPDATE SET ceiling = CASE WHEN excluded.ceiling > issue_ceilings.ceiling
			THEN excluded.ceiling ELSE issue_ceilings.ceiling END
		RETURNING ceiling`, kind, id, ceiling).Scan(&ceiling)
	return ceiling, err
}
