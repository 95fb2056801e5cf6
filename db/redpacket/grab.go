package redpacket

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Grab results of grabScript.
const (
	rpGrabbed  = 0
	rpAlready  = 1
	rpSoldOut  = 2
	rpExpired  = 3
	rpNotFound = 4
)

// grabScript decides a grab in one round trip.
//
// KEYS[1] meta hash (expires_ms, remaining_cents, expired), KEYS[2] unclaimed
// list ("seq:amount"), KEYS[3] claimed-by hash (user → "request:seq:amount:ms"),
// KEYS[4] claimed list, the flush queue ("user:seq:amount:ms")
// ARGV[1] user ID, ARGV[2] request ID, ARGV[3] now (unix ms)
//
// Returns {code, amount, grabbed_at_ms, remaining_count}; code is
// 0 grabbed (also when the same request runs again after a lost reply),
// 1 already_grabbed, 2 sold_out, 3 expired, 4 not_found.
var grabScript = redis.NewScript(`
local expires = redis.call('HGET', KEYS[1], 'expires_ms')
if not expires then return {4, 0, 0, 0} end
local mine = redis.call('HGET', KEYS[3], ARGV[1])
if mine then
  local req, seq, amount, at = string.match(mine, '^([^:]*):(%d+):(%d+):(%d+)$')
  if req == ARGV[2] then return {0, tonumber(amount), tonumber(at), redis.call('LLEN', KEYS[2])} end
  return {1, 0, 0, 0}
end
if redis.call('HEXISTS', KEYS[1], 'expired') == 1 or tonumber(ARGV[3]) >= tonumber(expires) then
  return {3, 0, 0, 0}
end
local share = redis.call('LPOP', KEYS[2])
if not share then return {2, 0, 0, 0} end
local amount = tonumber(string.match(share, ':(%d+)$'))
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ':' .. share .. ':' .. ARGV[3])
redis.call('RPUSH', KEYS[4], ARGV[1] .. ':' .. share .. ':' .. ARGV[3])
redis.call('HINCRBY', KEYS[1], 'remaining_cents', -amount)
return {0, amount, tonumber(ARGV[3]), redis.call('LLEN', KEYS[2])}
`)

// grabKeys are the keys grabScript touches.
func grabKeys(id int64) []string {
	return []string{metaKey(id), unclaimedKey(id), claimedByKey(id), claimedKey(id)}
}

// Grab opens a packet for a user: one Lua script decides it, with no SQL;
// the claim reaches SQLite through the batch flush.
func (s *Service) Grab(ctx context.Context, userID, id int64) (*model.RedPacketGrab, error) {
	// A packet's answers never turn from refusal to success (shares do not
	// come back while it is open), so a keyed grab needs only its request ID
	// remembered in the claim to answer a retry as it answered first.
	req, keyed := db.KeyedRequestID(ctx, "redpacket", userID)
	if !keyed {
		req = rdb.NewRequestID()
	}
	res, err := s.Eval(ctx, grabScript, grabKeys(id), userID, req, s.Now().UnixMilli()).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("grab red packet %d: %w", id, err)
	}
	if len(res) != 4 {
		return nil, fmt.Errorf("grab red packet %d: unexpected reply %v", id, res)
	}
	switch res[0] {
	case rpGrabbed:
	case rpAlready:
		return nil, db.ErrAlreadyGrabbed
	case rpSoldOut:
		return nil, db.ErrSoldOut
	case rpExpired:
		return nil, db.ErrExpired
	case rpNotFound:
		return nil, db.Errorf(db.ENOTFOUND, "red packet not found")
	default:
		return nil, fmt.Errorf("grab red packet %d: unknown code %d", id, res[0])
	}
	s.Events.PublishCoalesced(live.TopicRedPacket(id), model.RedPacketEvent{Type: "redpacket", RedPacketID: id, RemainingCount: res[3]})
	return &model.RedPacketGrab{RedPacketID: id, AmountCents: res[1], GrabbedAt: time.UnixMilli(res[2]).UTC()}, nil
}
