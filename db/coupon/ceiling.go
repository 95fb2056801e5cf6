package coupon

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
)

// A coupon's ID comes from its unit (UserCouponID), so a unit given twice is
// an ID acknowledged to two shoppers. Units never repeat, even when a
// failover rolls the stock counter back (a replica promoted without the
// master's last writes, REDIS_WAIT_REPLICAS=0) or Redis loses the template:
// the grab script gives units only up to a ceiling (the meta hash's "ceil")
// that the durable store recorded first (id_ceilings), a block at a time;
// a grab that meets it answers "reserve" and Go reserves the next block.
// On a Redis Cluster the meta hash also records the node that gives the
// units ("node", CLUSTER MYID); a grab on another node (a promoted replica,
// a moved slot) answers "moved", and the stock falls so that the next unit
// is above the durable ceiling, above every unit the old node may have
// given. A template loaded again starts above the ceiling too. The units in
// between are not sold: the stock shrinks by up to a block at a failover,
// and no coupon ID is acknowledged twice. (db/goods/sale/seq_blocks.go does the
// same for order IDs.)

// unitRun is coupon template id's run of units in the durable store.
func unitRun(id int64) backend.IDRun {
	return backend.IDRun{Kind: backend.CouponUnits, Item: id}
}

// resyncScript raises a template's unit ceiling; when the template's node is
// not this one, it first lowers the stock so that the next unit is above
// floor and records this node, or, not asked to (ARGV[4] ""), answers moved.
//
// KEYS[1] meta hash, KEYS[2] stock
// ARGV[1] floor: the durable ceiling read after a grab answered moved,
// ARGV[2] the new ceiling, ARGV[3] cluster flag, ARGV[4] "1": resync a move
// Returns ok, moved or not_loaded.
var resyncScript = redis.NewScript(`
local total = redis.call('HGET', KEYS[1], 'total')
if not total then return 'not_loaded' end
if ARGV[3] == '1' then
	local me = redis.call('CLUSTER', 'MYID')
	if redis.call('HGET', KEYS[1], 'node') ~= me then
		if ARGV[4] ~= '1' then return 'moved' end
		local cap = tonumber(total) - tonumber(ARGV[1])
		if tonumber(redis.call('GET', KEYS[2]) or '0') > cap then redis.call('SET', KEYS[2], cap) end
		redis.call('HSET', KEYS[1], 'node', me)
	end
end
if tonumber(redis.call('HGET', KEYS[1], 'ceil') or '0') < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'ceil', ARGV[2]) end
return 'ok'
`)

// reserveUnits answers a grab that met the ceiling (moved false) or found
// itself on another node (moved true): it reserves the next block above the
// units given and the durable ceiling, then raises the ceiling in Redis
// (after a move, above the durable ceiling read now, once the grab met the
// new node).
func (s *Service) reserveUnits(ctx context.Context, couponID int64, moved bool) error {
	total, err := s.Redis.HGet(ctx, metaKey(couponID), "total").Int64()
	if errors.Is(err, redis.Nil) {
		return nil // not loaded: the grab loads it
	} else if err != nil {
		return fmt.Errorf("read coupon %d in redis: %w", couponID, err)
	}
	floor, err := s.IssueCeiling(ctx, unitRun(couponID))
	if err != nil {
		return fmt.Errorf("read the unit ceiling of coupon %d: %w", couponID, err)
	}
	left, err := s.Redis.Get(ctx, stockKey(couponID)).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read the stock of coupon %d: %w", couponID, err)
	}
	ceiling, err := s.RaiseIssueCeiling(ctx, unitRun(couponID), min(max(floor, total-left)+backend.IssueBlock(total), total))
	if err != nil {
		return fmt.Errorf("reserve units of coupon %d: %w", couponID, err)
	}
	flag := ""
	if moved {
		flag = "1"
		if err := s.rememberUsers(ctx, couponID); err != nil {
			return err
		}
	}
	if err := resyncScript.Run(ctx, s.Redis, []string{metaKey(couponID), stockKey(couponID)}, floor, ceiling, s.ClusterFlag(), flag).Err(); err != nil {
		return fmt.Errorf("raise the unit ceiling of coupon %d: %w", couponID, err)
	}
	return nil
}

// raiseUsersScript raises users' grab counts to what the store holds, never lowers one.
//
// KEYS[1] users hash
// ARGV pairs of user ID and count
// Returns "ok".
var raiseUsersScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
	if tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0') < tonumber(ARGV[i + 1]) then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 'ok'
`)

// rememberUsers raises the template's per-user counts in Redis to the
// coupons the store holds, before a moved template gives units again: a
// shopper whose flushed coupon the failover rolled back is answered
// limit_reached, not given one more the durable guard would refuse.
func (s *Service) rememberUsers(ctx context.Context, couponID int64) error {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT user_id, COUNT(*) FROM user_coupons WHERE coupon_id = ? GROUP BY user_id`, couponID)
	if err != nil {
		return fmt.Errorf("read holders of coupon %d: %w", couponID, err)
	}
	defer rows.Close()
	var args []any
	for rows.Next() {
		var uid, n int64
		if err := rows.Scan(&uid, &n); err != nil {
			return err
		}
		args = append(args, uid, n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for start := 0; start < len(args); start += 1000 {
		if err := raiseUsersScript.Run(ctx, s.Redis, []string{usersKey(couponID)}, args[start:min(start+1000, len(args))]...).Err(); err != nil {
			return fmt.Errorf("remember holders of coupon %d: %w", couponID, err)
		}
	}
	return nil
}
