package coupon

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// held reads, for each template, how many coupons the user holds by the
// grab script's own limit mark (usersKey), so a page shows "Limit reached"
// at once after a grab, before the flush reaches the store.
func (s *Service) held(ctx context.Context, userID int64, cs []*model.Coupon) (map[int64]int64, error) {
	out := map[int64]int64{}
	if userID == 0 || len(cs) == 0 {
		return out, nil
	}
	uid := strconv.FormatInt(userID, 10)
	cmds := make([]*redis.StringCmd, len(cs))
	_, err := s.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cs {
			cmds[i] = p.HGet(ctx, usersKey(c.ID), uid)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read coupon limit marks of user %d: %w", userID, err)
	}
	for i, c := range cs {
		if n, err := cmds[i].Int64(); err == nil && n > 0 {
			out[c.ID] = n
		}
	}
	return out, nil
}
