package redpacket

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
)

// A share goes to one shopper, even when a failover rolls the packet back
// or Redis loses it: shares go out in seq order, a packet's share seqs are
// one run of db/backend/ceilings.go's issue ceilings, the meta hash's "ceil"
// and "node" its Redis half. The grab script answers "reserve" at the
// ceiling and "moved" on another node; a move withholds the unclaimed
// shares below the durable ceiling (withheldKey), which the old node may
// have given: never given again, refunded at the expiry unless the store
// holds them as someone's. A packet loaded again withholds them too.

// shareRun is red packet id's run of share seqs in the durable store.
func shareRun(id int64) backend.IDRun {
	return backend.IDRun{Kind: backend.RedPacketShares, Item: id}
}

// shareResyncScript raises a packet's share ceiling (backend.CeilingScript);
// a move withholds the unclaimed shares below the floor. An expired packet
// is left as it is: its refund reads the lists.
//
// KEYS[1] meta hash, KEYS[2] unclaimed list, KEYS[3] withheld list
var shareResyncScript = backend.CeilingScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_loaded' end
if redis.call('HEXISTS', KEYS[1], 'expired') == 1 then return 'ok' end`, `
		while true do
			local head = redis.call('LINDEX', KEYS[2], 0)
			if not head then break end
			local seq, amount = string.match(head, '^(%d+):(%d+)$')
			if tonumber(seq) >= tonumber(ARGV[1]) then break end
			redis.call('LPOP', KEYS[2])
			redis.call('RPUSH', KEYS[3], head)
			redis.call('HINCRBY', KEYS[1], 'remaining_cents', -tonumber(amount))
		end`)

// reserveShares answers a grab that met the ceiling (moved false) or found
// itself on another node (moved true): the next share is the unclaimed
// list's head, at least the durable ceiling.
func (s *Service) reserveShares(ctx context.Context, id int64, moved bool) error {
	_, _, err := s.ReserveIDs(ctx, backend.IDIssuer{
		Run:  shareRun(id),
		What: fmt.Sprintf("shares of red packet %d", id),
		Next: func(ctx context.Context, floor int64) (int64, int64, bool, error) {
			count, err := s.Redis.HGet(ctx, metaKey(id), "count").Int64()
			if errors.Is(err, redis.Nil) {
				return 0, 0, false, nil // not loaded: the grab answers so
			} else if err != nil {
				return 0, 0, false, fmt.Errorf("read red packet %d in redis: %w", id, err)
			}
			next := floor
			head, err := s.Redis.LIndex(ctx, unclaimedKey(id), 0).Result()
			if err == nil {
				seq, _, _ := strings.Cut(head, ":")
				n, err := strconv.ParseInt(seq, 10, 64)
				if err != nil {
					return 0, 0, false, fmt.Errorf("red packet %d: malformed share %q", id, head)
				}
				next = max(next, n)
			} else if !errors.Is(err, redis.Nil) {
				return 0, 0, false, fmt.Errorf("read the next share of red packet %d: %w", id, err)
			}
			return next, count, true, nil
		},
		Remember: func(ctx context.Context) error { return s.rememberClaims(ctx, id) },
		Resync:   shareResyncScript,
		Keys:     []string{metaKey(id), unclaimedKey(id), withheldKey(id)},
	}, moved)
	return err
}

// rememberClaims puts the claims the store holds back in the packet's
// claimed-by hash where the node lost them, before a moved packet gives
// shares again: a shopper whose flushed claim the failover rolled back is
// answered already_grabbed (or their share, a retry), not given a second
// share the store would refuse.
func (s *Service) rememberClaims(ctx context.Context, id int64) error {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT user_id, seq, amount_cents, grabbed_ms FROM redpacket_shares
		WHERE redpacket_id = ? AND user_id IS NOT NULL`, id)
	if err != nil {
		return fmt.Errorf("read claims of red packet %d: %w", id, err)
	}
	defer rows.Close()
	pipe := s.Redis.Pipeline()
	for rows.Next() {
		var uid, at int64
		var sh share
		if err := rows.Scan(&uid, &sh.seq, &sh.amount, &at); err != nil {
			return err
		}
		pipe.HSetNX(ctx, claimedByKey(id), strconv.FormatInt(uid, 10), fmt.Sprintf("restored:%s:%d", sh, at))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("remember claims of red packet %d: %w", id, err)
	}
	return nil
}
