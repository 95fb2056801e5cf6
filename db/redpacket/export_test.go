package redpacket

import (
	"context"
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

// RollBackAsPromotedReplica leaves packet id as a replica that lagged behind
// its master and was promoted holds it: only the first keep grabs (none
// flushed yet) happened, the later ones' shares are unclaimed again, and
// the packet is recorded as given out by another node (the dead master's ID).
func (s *Service) RollBackAsPromotedReplica(ctx context.Context, id int64, keep int) error {
	recs, err := s.Redis.LRange(ctx, claimedKey(id), 0, -1).Result()
	if err != nil {
		return err
	}
	for i := len(recs) - 1; i >= keep; i-- {
		f := strings.Split(recs[i], ":") // user:seq:amount:ms
		amount, _ := strconv.ParseInt(f[2], 10, 64)
		pipe := s.Redis.TxPipeline()
		pipe.LPush(ctx, unclaimedKey(id), f[1]+":"+f[2])
		pipe.HDel(ctx, claimedByKey(id), f[0])
		pipe.HIncrBy(ctx, metaKey(id), "remaining_cents", amount)
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	if err := s.Redis.LTrim(ctx, claimedKey(id), 0, int64(keep)-1).Err(); err != nil {
		return err
	}
	return s.Redis.HSet(ctx, metaKey(id), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}
