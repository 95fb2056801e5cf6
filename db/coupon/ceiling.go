package coupon

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
)

// A coupon's ID comes from its unit (UserCouponID), so a unit given twice is
// an ID acknowledged to two shoppers. A template's units are one run of
// db/backend/ceilings.go's issue ceilings, the meta hash's "ceil" and "node"
// its Redis half: the grab script answers "reserve" at the ceiling and
// "moved" on another node, and a move lowers the stock so that the next
// unit is above the durable ceiling. The units in between are not sold.

// unitRun is coupon template id's run of units in the durable store.
func unitRun(id int64) backend.IDRun {
	return backend.IDRun{Kind: backend.CouponUnits, Item: id}
}

// unitResyncScript raises a template's unit ceiling (backend.CeilingScript);
// a move lowers the stock so that the next unit is above the floor.
//
// KEYS[1] meta hash, KEYS[2] stock
var unitResyncScript = backend.CeilingScript(`
local total = redis.call('HGET', KEYS[1], 'total')
if not total then return 'not_loaded' end`, `
		local cap = tonumber(total) - tonumber(ARGV[1])
		if tonumber(redis.call('GET', KEYS[2]) or '0') > cap then redis.call('SET', KEYS[2], cap) end`)

// reserveUnits answers a grab that met the ceiling (moved false) or found
// itself on another node (moved true): the units given are the total less
// the stock, at least the durable ceiling.
func (s *Service) reserveUnits(ctx context.Context, couponID int64, moved bool) error {
	_, _, err := s.ReserveIDs(ctx, backend.IDIssuer{
		Run:  unitRun(couponID),
		What: fmt.Sprintf("units of coupon %d", couponID),
		Next: func(ctx context.Context, floor int64) (int64, int64, bool, error) {
			total, err := s.Redis.HGet(ctx, metaKey(couponID), "total").Int64()
			if errors.Is(err, redis.Nil) {
				return 0, 0, false, nil // not loaded: the grab loads it
			} else if err != nil {
				return 0, 0, false, fmt.Errorf("read coupon %d in redis: %w", couponID, err)
			}
			left, err := s.Redis.Get(ctx, stockKey(couponID)).Int64()
			if err != nil && !errors.Is(err, redis.Nil) {
				return 0, 0, false, fmt.Errorf("read the stock of coupon %d: %w", couponID, err)
			}
			return max(floor, total-left), total, true, nil
		},
		Remember: func(ctx context.Context) error { return s.rememberUsers(ctx, couponID) },
		Resync:   unitResyncScript,
		Keys:     []string{metaKey(couponID), stockKey(couponID)},
	}, moved)
	return err
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
