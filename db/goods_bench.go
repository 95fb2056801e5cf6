package db

import (
	"context"

	"github.com/seckill/seckill/db/rdb"
)

// GrabScriptOnly runs the goods grab script and nothing else: no expiry task,
// no live events, one plain EVALSHA. It is the load bench's "Redis limit",
// the rate the grab could reach with no HTTP and no other work.
func (s *Store) GrabScriptOnly(ctx context.Context, userID, goodsID int64) (string, error) {
	now := s.Now()
	keys := goodsScriptKeys(goodsID, grabMemoKey(goodsID, rdb.NewRequestID()))
	for attempt := 0; ; attempt++ {
		res, err := grabScript.Run(ctx, s.Redis, keys, userID, now.UnixMilli(), now.Add(s.OrderTTL).UnixMilli(), grabMemoTTL.Milliseconds()).Slice()
		if err != nil {
			return "", err
		}
		code, _ := res[0].(string)
		if code != "not_loaded" || attempt > 0 {
			return code, nil
		}
		if err := s.loadLiveGoods(ctx, goodsID); err != nil {
			return "", err
		}
	}
}
