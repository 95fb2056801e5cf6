package redpacket

import (
	"context"
	"sort"
	"strconv"
	"strings"
)

// Internals of the red packet code that the tests in redpacket_test reach.
var (
	FlushQueue    = flushQueue
	ProcessingKey = processingKey
	ClaimedKey    = claimedKey
	MetaKey       = metaKey
	LoadingKey    = loadingKey
	FlushingKey   = flushingKey
	GrabScript    = grabScript
	GrabKeys      = grabKeys
	ApplyClaims   = (*Service).applyClaims
)

// ClaimedByKey maps each user who grabbed to "request:seq:amount:grabbed_ms".
var ClaimedByKey = claimedByKey

// RollBackAsPromotedReplica leaves packet id as a replica that lagged
// behind its master and was promoted holds it: the grabs of the users lost
// (flushed or not) never happened there, their shares are unclaimed again,
// and the packet is recorded as given out by another node (the dead
// master's ID).
func (s *Service) RollBackAsPromotedReplica(ctx context.Context, id int64, lost []int64) error {
	var back []share
	for _, u := range lost {
		field := strconv.FormatInt(u, 10)
		rec, err := s.Redis.HGet(ctx, claimedByKey(id), field).Result()
		if err != nil {
			return err
		}
		f := strings.Split(rec, ":") // request:seq:amount:ms
		seq, _ := strconv.ParseInt(f[1], 10, 64)
		amount, _ := strconv.ParseInt(f[2], 10, 64)
		back = append(back, share{seq, amount})
		pipe := s.Redis.TxPipeline()
		pipe.LRem(ctx, claimedKey(id), 0, field+":"+f[1]+":"+f[2]+":"+f[3])
		pipe.HDel(ctx, claimedByKey(id), field)
		pipe.HIncrBy(ctx, metaKey(id), "remaining_cents", amount)
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	sort.Slice(back, func(i, j int) bool { return back[i].seq > back[j].seq })
	for _, sh := range back {
		if err := s.Redis.LPush(ctx, unclaimedKey(id), sh.String()).Err(); err != nil {
			return err
		}
	}
	return s.Redis.HSet(ctx, metaKey(id), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}
