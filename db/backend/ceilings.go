package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Issue ceilings keep an ID acknowledged to one shopper from being issued to
// another when Redis rolls back: goods order sequences (one run per
// bucket), coupon units and red packet shares all follow this one protocol,
// and this file is its one implementation (ReserveIDs, CeilingScript). The
// areas give only what is theirs: how to read the next ID their Redis state
// would issue, and what to roll back when another node took over.
//
//  1. The durable store records a ceiling first (id_ceilings, one row per
//     IDRun, RaiseIssueCeiling: it never falls), a block at a time; then the
//     item's Redis hash gets it ("ceil"). An area's grab script issues IDs
//     only below "ceil" and answers "reserve" when it meets it: ReserveIDs
//     reserves the next block above the IDs issued (one SQL write per block,
//     not per grab).
//  2. Redis may lose an item (a node restarted without persistence and
//     without a replica). An item loaded again starts above the durable
//     ceiling, so above every ID it may have issued, acknowledged or not,
//     flushed or not.
//  3. A failover must not roll the IDs back either: a replica promoted
//     after its master died may lack the master's last writes
//     (REDIS_WAIT_REPLICAS=0, or a WAIT that fell short). So on a Redis
//     Cluster the item's hash records the node that issues ("node",
//     CLUSTER MYID, when the scripts' cluster flag is "1"); a grab on another
//     node (a promoted replica, a moved slot) answers "moved", and
//     ReserveIDs(moved) restores what the durable store holds that the node
//     lost (IDIssuer.Remember: per-shopper counts and claims), then the
//     resync script skips every ID below the durable ceiling, which the old
//     node may have issued (the area's rewind), records this node, and
//     raises "ceil". A single Redis server has no node ID to compare: it has
//     no replica to fail over to.
//
// IDs jump by up to a block at a failover (order numbers skip, coupon stock
// shrinks, red packet shares are withheld and refunded), and never repeat.

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

// An IDIssuer is one run of IDs an area's Redis script issues below a
// ceiling: what the protocol (above) needs from the area.
type IDIssuer struct {
	Run  IDRun
	What string // in errors: "order sequences of goods 3 bucket 1"
	// Next reads the next ID the item's Redis state would issue, given the
	// durable ceiling floor (IDs below it may have been issued), and the
	// run's size (the ceiling never rises above it); loaded false when
	// Redis does not hold the item: its load starts above the durable
	// ceiling, nothing to reserve now.
	Next  func(ctx context.Context, floor int64) (next, size int64, loaded bool, err error)
	Block int64 // how many IDs a reservation adds (0: IssueBlock of the size)
	// Remember, when not nil, restores in Redis what the durable store holds
	// and a moved item's node may have lost, before the item issues again.
	Remember func(ctx context.Context) error
	// Resync is the area's CeilingScript and Keys its keys (KEYS[1] the
	// item's hash holding "ceil" and "node").
	Resync *redis.Script
	Keys   []string
}

// ReserveIDs answers a grab that met its run's ceiling (moved false) or ran
// on another node than the one that issued before (moved true): it reserves
// the next block above the next ID in the durable store, then resyncs the
// item's Redis state (after a move: skipping the IDs below the durable
// ceiling). It returns the ceiling recorded and the next ID (ceiling <=
// next: the run is used up); zeros when Redis does not hold the item.
func (b *Backend) ReserveIDs(ctx context.Context, is IDIssuer, moved bool) (ceiling, next int64, err error) {
	floor, err := b.IssueCeiling(ctx, is.Run)
	if err != nil {
		return 0, 0, fmt.Errorf("read the ceiling of the %s: %w", is.What, err)
	}
	next, size, loaded, err := is.Next(ctx, floor)
	if err != nil || !loaded {
		return 0, 0, err
	}
	block := is.Block
	if block == 0 {
		block = IssueBlock(size)
	}
	ceiling, err = b.RaiseIssueCeiling(ctx, is.Run, min(next+block, size))
	if err != nil {
		return 0, 0, fmt.Errorf("reserve %s: %w", is.What, err)
	}
	flag := ""
	if moved {
		flag = "1"
		if is.Remember != nil {
			if err := is.Remember(ctx); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := is.Resync.Run(ctx, b.Redis, is.Keys, floor, ceiling, b.ClusterFlag(), flag).Err(); err != nil {
		return 0, 0, fmt.Errorf("raise the ceiling of the %s: %w", is.What, err)
	}
	return ceiling, next, nil
}

// CeilingScript is an area's resync script: it raises the item's "ceil"
// (never lowers it); when the item's node is not this one it first runs
// rewind, which skips the IDs below ARGV[1], and records this node, or,
// not asked to (ARGV[4] ""), answers moved. guard runs first and may answer
// early (not_loaded when Redis does not hold the item).
//
// KEYS[1] the item's hash ("ceil", "node"), KEYS[2...] the area's
// ARGV[1] floor: the durable ceiling read before the reservation,
// ARGV[2] the new ceiling, ARGV[3] cluster flag, ARGV[4] "1": resync a move
// Returns ok, moved or what guard answers.
func CeilingScript(guard, rewind string) *redis.Script {
	return redis.NewScript(guard + `
if ARGV[3] == '1' then
	local me = redis.call('CLUSTER', 'MYID')
	if redis.call('HGET', KEYS[1], 'node') ~= me then
		if ARGV[4] ~= '1' then return 'moved' end
` + rewind + `
		redis.call('HSET', KEYS[1], 'node', me)
	end
end
if tonumber(redis.call('HGET', KEYS[1], 'ceil') or '0') < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'ceil', ARGV[2]) end
return 'ok'
`)
}
