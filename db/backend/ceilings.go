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
// area's script issues IDs (goods order sequences, red packet shares, coupon
// units) only below a ceiling the durable store recorded first (id_ceilings,
// one row per IDRun), reserved a block at a time. On a Redis Cluster the
// item's Redis state also records the node that issues (CLUSTER MYID, when
// the scripts' cluster flag is "1"), so a script on another node knows that
// the IDs up to the durable ceiling may have been issued there.

// CeilingKind names what a run of IDs numbers: id_ceilings' kind column.
type CeilingKind string

// The kinds of IDs issued below a ceiling.
const (
	GoodsOrders     CeilingKind = "goods"     // a goods bucket's order sequences (part: the bucket)
	RedPacketShares CeilingKind = "redpacket" // a red packet's share seqs
	CouponUnits     CeilingKind = "coupon"    // a coupon template's units
)

// IDRun names one run of IDs with a ceiling of its own: an item of a kind,
// and the part of the item that issues them (a goods bucket; 0 where the
// item has one run).
type IDRun struct {
	Kind CeilingKind
	Item int64
	Part int64
}

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

// IssueCeiling is the ceiling the store recorded for run: the IDs below it
// may have been issued (0: none yet).
func (b *Backend) IssueCeiling(ctx context.Context, run IDRun) (int64, error) {
	var c int64
	err := b.SQL.R.QueryRowContext(ctx, `SELECT ceiling FROM id_ceilings WHERE kind = ? AND item_id = ? AND part = ?`,
		string(run.Kind), run.Item, run.Part).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return c, err
}

// RaiseIssueCeiling records ceiling for run unless a higher one is
// recorded, and returns the one recorded: a ceiling never falls.
func (b *Backend) RaiseIssueCeiling(ctx context.Context, run IDRun, ceiling int64) (int64, error) {
	err := b.SQL.W.QueryRowContext(ctx, `INSERT INTO id_ceilings (kind, item_id, part, ceiling) VALUES (?, ?, ?, ?)
		ON CONFLICT (kind, item_id, part) DO UPDATE SET ceiling = CASE WHEN excluded.ceiling > id_ceilings.ceiling
			THEN excluded.ceiling ELSE id_ceilings.ceiling END
		RETURNING ceiling`, string(run.Kind), run.Item, run.Part, ceiling).Scan(&ceiling)
	return ceiling, err
}
