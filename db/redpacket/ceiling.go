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
// (a replica promoted without its master's last grabs, REDIS_WAIT_REPLICAS
// 0) or Redis loses it: shares go out in seq order, and the grab script
// gives one only below a ceiling (the meta hash's "ceil") that the durable
// store recorded first (id_ceilings), a block at a time; a grab that
// meets it answers "reserve" and Go reserves the next block. On a Redis
// Cluster the meta hash also records the node that gives the shares
// ("node", CLUSTER MYID); a grab on another node (a promoted replica, a
// moved slot) answers "moved", and the unclaimed shares below the durable
// ceiling, which the old node may have given, are withheld (withheldKey):
// never given again, refunded at the expiry unless the store holds them as
// someone's. A packet loaded again withholds them too. Up to a block of
// shares is withheld at a failover, and no share is acknowledged twice.
// (db/goods/sale/seq_blocks.go does the same for order IDs.)

// shareRun is red packet id's run of share seqs in the durable store.
func shareRun(id int64) backend.IDRun {
	return backend.IDRun{Kind: backend.RedPacketShares, Item: id}
}

// resyncScript raises a packet's share ceiling; when the packet's node is
// not this one, it first withholds the unclaimed shares below floor and
// records this node, or, not asked to (ARGV[4] ""), answers moved. An
// expired packet is left as it is: its refund reads the lists.
//
// KEYS[1] meta hash, KEYS[2] unclaimed list, KEYS[3] withheld list
// ARGV[1] floor: the durable ceiling read after a grab answered moved,
// ARGV[2] the new ceiling, ARGV[3] cluster flag, ARGV[4] "1": resync a move
// Returns ok, moved or not_loaded.
var resyncScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_loaded' end
if redis.call('HEXISTS', KEYS[1], 'expired') == 1 then return 'ok' end
if ARGV[3] == '1' then
	local me = redis.call('CLUSTER', 'MYID')
	if redis.call('HGET', KEYS[1], 'node') ~= me then
		if ARGV[4] ~= '1' then return 'moved' end
		while true do
			local head = redis.call('LINDEX', KEYS[2], 0)
			if not head then break end
			local seq, amount = string.match(head, '^(%d+):(%d+)$')
			if tonumber(seq) >= tonumber(ARGV[1]) then break end
			redis.call('LPOP', KEYS[2])
			redis.call('RPUSH', KEYS[3], head)
			redis.call('HINCRBY', KEYS[1], 'remaining_cents', -tonumber(amount))
		end
		redis.call('HSET', KEYS[1], 'node', me)
	end
end
if tonumber(redis.call('HGET', KEYS[1], 'ceil') or '0') < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'ceil', ARGV[2]) end
return 'ok'
`)

// reserveShares answers a grab that met the ceiling (moved false) or found
// itself on another node (moved true): it reserves the next block above the
// next share and the durable ceiling, then raises the ceiling in Redis
// (after a move, withholding below the durable ceiling read now, once the
// grab met the new node).
func (s *Service) reserveShares(ctx context.Context, id int64, moved bool) error {
	count, err := s.Redis.HGet(ctx, metaKey(id), "count").Int64()
	if errors.Is(err, redis.Nil) {
		return nil // not loaded: the grab answers so
	} else if err != nil {
		return fmt.Errorf("read red packet %d in redis: %w", id, err)
	}
	floor, err := s.IssueCeiling(ctx, shareRun(id))
	if err != nil {
		return fmt.Errorf("read the share ceiling of red packet %d: %w", id, err)
	}
	next := floor
	head, err := s.Redis.LIndex(ctx, unclaimedKey(id), 0).Result()
	if err == nil {
		seq, _, _ := strings.Cut(head, ":")
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil {
			return fmt.Errorf("red packet %d: malformed share %q", id, head)
		}
		next = max(next, n)
	} else if !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read the next share of red packet %d: %w", id, err)
	}
	ceiling, err := s.RaiseIssueCeiling(ctx, shareRun(id), min(next+backend.IssueBlock(count), count))
	if err != nil {
		return fmt.Errorf("reserve shares of red packet %d: %w", id, err)
	}
	flag := ""
	if moved {
		flag = "1"
		if err := s.rememberClaims(ctx, id); err != nil {
			return err
		}
	}
	err = resyncScript.Run(ctx, s.Redis, []string{metaKey(id), unclaimedKey(id), withheldKey(id)}, floor, ceiling, s.ClusterFlag(), flag).Err()
	if err != nil {
		return fmt.Errorf("raise the share ceiling of red packet %d: %w", id, err)
	}
	return nil
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
