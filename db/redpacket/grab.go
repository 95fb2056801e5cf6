package redpacket

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// grabScript decides a grab in one round trip.
//
// KEYS[1] meta hash (expires_ms, remaining_cents, expired), KEYS[2] unclaimed
// list ("seq:amount"), KEYS[3] claimed-by hash (user → "request:seq:amount:ms"),
// KEYS[4] claimed list, the flush queue ("user:seq:amount:ms"); the records'
// fields are named in record.go
// ARGV[1] user ID, ARGV[2] request ID, ARGV[3] now (unix ms), ARGV[4]
// cluster flag: "1" checks the node that gives the shares (ceiling.go)
//
// Returns "ok:<amount>:<grabbed_ms>:<remaining_count>" (also when the same
// request runs again after a lost reply), already_grabbed, sold_out, expired,
// not_found, or reserve (the next share is above the ceiling) or moved
// (another node gave the shares: ceiling.go), which change nothing.
var grabScript = redis.NewScript(recordsLua + `
local expires = redis.call('HGET', KEYS[1], 'expires_ms')
if not expires then return 'not_found' end
local mine = redis.call('HGET', KEYS[3], ARGV[1])
if mine then
  local m = mineFields(mine)
  if m[M_REQUEST] == ARGV[2] then return 'ok:' .. m[M_AMOUNT] .. ':' .. m[M_GRABBED] .. ':' .. redis.call('LLEN', KEYS[2]) end
  return 'already_grabbed'
end
if redis.call('HEXISTS', KEYS[1], 'expired') == 1 or tonumber(ARGV[3]) >= tonumber(expires) then
  return 'expired'
end
local head = redis.call('LINDEX', KEYS[2], 0)
if head and ARGV[4] == '1' then
  local me, node = redis.call('CLUSTER', 'MYID'), redis.call('HGET', KEYS[1], 'node')
  if not node then redis.call('HSET', KEYS[1], 'node', me) elseif node ~= me then return 'moved' end
end
if head and tonumber(shareFields(head)[S_SEQ]) >= tonumber(redis.call('HGET', KEYS[1], 'ceil') or '0') then return 'reserve' end
local share = redis.call('LPOP', KEYS[2])
if not share then return 'sold_out' end
local sh = shareFields(share)
local amount = sh[S_AMOUNT]
redis.call('HSET', KEYS[3], ARGV[1], mineRecord({[M_REQUEST] = ARGV[2], [M_SEQ] = sh[S_SEQ], [M_AMOUNT] = amount, [M_GRABBED] = ARGV[3]}))
redis.call('RPUSH', KEYS[4], claimRecord({[C_USER] = ARGV[1], [C_SEQ] = sh[S_SEQ], [C_AMOUNT] = amount, [C_GRABBED] = ARGV[3]}))
redis.call('HINCRBY', KEYS[1], 'remaining_cents', -tonumber(amount))
return 'ok:' .. amount .. ':' .. ARGV[3] .. ':' .. redis.call('LLEN', KEYS[2])
`)

// claimedBy reports whether the user's claim of the packet was made by
// request req (a keyed grab answered before).
func (s *Service) claimedBy(ctx context.Context, id, userID int64, req string) (bool, error) {
	rec, err := s.Redis.HGet(ctx, claimedByKey(id), strconv.FormatInt(userID, 10)).Result()
	if err != nil {
		return false, nil
	}
	m, err := mineFields.Decode(rec)
	return err == nil && m.request == req, nil
}

// Grab opens a packet for a user: one Lua script decides it, with no SQL;
// the claim reaches SQLite through the batch flush.
func (s *Service) Grab(ctx context.Context, userID, id int64) (*model.RedPacketGrab, error) {
	// A packet's answers never turn from refusal to success (shares do not
	// come back while it is open), so a keyed grab needs only its request ID
	// remembered in the claim to answer a retry as it answered first.
	req, keyed := db.KeyedRequestID(ctx, "redpacket", userID)
	if held := db.HeldRefusal(ctx); held != nil { // the sale is paused: only a keyed retry of a grab that won is answered
		if ok, err := s.claimedBy(ctx, id, userID, req); err != nil || !ok || !keyed {
			return nil, held
		}
	}
	if !keyed {
		req = rdb.NewRequestID()
	}
	var reply string
	for tries := 0; ; tries++ {
		var err error
		reply, err = s.Eval(ctx, grabScript, grabKeys(id), userID, req, s.Now().UnixMilli(), s.ClusterFlag()).Text()
		if err != nil {
			return nil, fmt.Errorf("grab red packet %d: %w", id, err)
		}
		if reply != "reserve" && reply != "moved" {
			break
		}
		if tries >= 100 {
			return nil, fmt.Errorf("grab red packet %d: no share reserved after %d tries", id, tries)
		}
		if err := s.reserveShares(ctx, id, reply == "moved"); err != nil {
			return nil, err
		}
	}
	switch code, data, _ := strings.Cut(reply, ":"); code {
	case "ok":
		n, ok := splitInts(data, 3) // amount, grabbed_ms, remaining_count
		if !ok {
			return nil, fmt.Errorf("grab red packet %d: unexpected answer %q", id, reply)
		}
		s.Events.PublishCoalesced(live.TopicRedPacket(id), model.RedPacketEvent{Type: "redpacket", RedPacketID: id, RemainingCount: n[2]})
		return &model.RedPacketGrab{RedPacketID: id, AmountCents: n[0], GrabbedAt: msTime(n[1])}, nil
	case "already_grabbed":
		return nil, db.ErrAlreadyGrabbed
	case "sold_out":
		return nil, db.ErrSoldOut
	case "expired":
		return nil, db.ErrExpired
	case "not_found":
		return nil, db.Errorf(db.ENOTFOUND, "red packet not found")
	default:
		return nil, fmt.Errorf("grab red packet %d: unexpected answer %q", id, reply)
	}
}
