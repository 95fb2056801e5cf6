package sale

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// The engine's two doors besides Decide: a raffle's award, which passes no
// stage, and the bench's bare call.

// Award gives the raffle's winner userID a unit of the goods: the grab a
// raffle's draw makes for its winner, past every stage (the fair sale's
// admission refuses shoppers' grabs of a raffle), under a request of its
// own so a second award of the same winner answers the first. A winner
// who holds an order already (another award won it) is answered
// limit_reached; AwardedOrder finds that order.
func (s *Sale) Award(ctx context.Context, userID, goodsID int64) (*model.Order, error) {
	o := s.decideInRedis(ctx, Grab{User: userID, Goods: goodsID,
		Request: "raffle:" + strconv.FormatInt(goodsID, 10) + ":" + strconv.FormatInt(userID, 10)}, s.Now())
	return o.Order, o.Err
}

// GrabCall is decideScript's call for one grab of the user at now under
// requestID, in the user's home bucket for the bucket count this process
// last read (1 if none). The load bench runs it bare (one EVALSHA, no HTTP
// and no follow-up work) as the most a grab could do on the machine.
func (s *Sale) GrabCall(userID, goodsID int64, requestID string, now time.Time) (*redis.Script, []string, []any) {
	k, _ := s.knownShards(goodsID)
	home := Bucket{Goods: goodsID, N: HomeBucket(userID, k), K: k}
	return decideScript, s.decideKeys(home, requestID), s.decideArgs(home, false, "", []batchedGrab{{user: userID, now: now}})
}
