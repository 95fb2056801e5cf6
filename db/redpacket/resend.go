package redpacket

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/sqldb"
)

// resendScript queues a claim again for the flush for every user the
// packet's claimed-by hash holds, in the order of their shares: the apply
// is idempotent (a claim fills its share only while the share is unclaimed
// and the user holds none of the packet), so what the store holds changes
// nothing and what it lacks (a store restored from a backup older than
// Redis) is written again.
//
// KEYS[1] claimed-by hash (user → "request:seq:amount:grabbed_ms"), KEYS[2]
// claimed list, the flush queue ("user:seq:amount:grabbed_ms"); the records'
// fields are named in record.go
// Returns how many claims it queued.
var resendScript = redis.NewScript(backend.RequeueLua + recordsLua + `
local all = redis.call('HGETALL', KEYS[1])
local seqs, recs = {}, {}
for i = 1, #all, 2 do
	local m = mineFields(all[i + 1])
	local seq = tonumber(m[M_SEQ])
	seqs[#seqs + 1] = seq
	recs[seq] = claimRecord({[C_USER] = all[i], [C_SEQ] = m[M_SEQ], [C_AMOUNT] = m[M_AMOUNT], [C_GRABBED] = m[M_GRABBED]})
end
return requeue(KEYS[2], seqs, recs)
`)

// packetIDs lists every packet the store holds.
func (s *Service) packetIDs(ctx context.Context) ([]int64, error) {
	ids, err := sqldb.IDs(ctx, s.SQL.R, `SELECT id FROM redpackets ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list red packets: %w", err)
	}
	return ids, nil
}

// ResendClaims queues every claim Redis holds (resendScript) of every
// packet the store holds for the flush again and returns how many it
// queued. After a restore of the store from a backup it brings back the
// claims made after the backup was taken; the next flush writes them.
func (s *Service) ResendClaims(ctx context.Context) (int64, error) {
	ids, err := s.packetIDs(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	var errs []error
	for _, id := range ids {
		k, err := resendScript.Run(ctx, s.Redis, []string{claimedByKey(id), claimedKey(id)}).Int64()
		if err == nil && k > 0 {
			err = s.Redis.SAdd(ctx, flushingKey, id).Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resend the claims of red packet %d: %w", id, err))
		}
		n += k
	}
	return n, errors.Join(errs...)
}

// ClaimsMissing counts, per packet, the claims Redis holds that the store
// lacks (the share is not the user's there): after a restore and
// ResendClaims with its flush, none (the drift of red packets).
func (s *Service) ClaimsMissing(ctx context.Context) (map[int64]int64, error) {
	ids, err := s.packetIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	for _, id := range ids {
		all, err := s.Redis.HGetAll(ctx, claimedByKey(id)).Result()
		if err != nil {
			return nil, fmt.Errorf("read the claims of red packet %d: %w", id, err)
		}
		if len(all) == 0 {
			continue
		}
		held := map[int64]int64{} // seq → user
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT seq, user_id FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, id)
		if err != nil {
			return nil, fmt.Errorf("read the shares of red packet %d: %w", id, err)
		}
		for rows.Next() {
			var seq, user int64
			if err := rows.Scan(&seq, &user); err != nil {
				rows.Close()
				return nil, err
			}
			held[seq] = user
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for user, rec := range all {
			uid, err := strconv.ParseInt(user, 10, 64)
			m, merr := mineFields.Decode(rec)
			if err != nil || merr != nil || held[m.seq] != uid {
				out[id]++
			}
		}
	}
	return out, nil
}
