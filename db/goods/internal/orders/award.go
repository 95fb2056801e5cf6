package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// LatestOrder returns the user's latest order of the goods (nil: none):
// from Redis while the goods is there (the user's list in their home
// bucket), else from the store. A raffle finds by it the order its
// winner holds (sale.Award answers limit_reached for one).
func (l *Ledger) LatestOrder(ctx context.Context, goodsID, userID int64) (*model.Order, error) {
	k, err := l.ShardsOne(ctx, goodsID, true)
	if err != nil {
		return nil, err
	}
	home := sale.Bucket{Goods: goodsID, N: sale.HomeBucket(userID, k), K: k}
	mine, err := l.Redis.HGet(ctx, sale.MineKey(home), strconv.FormatInt(userID, 10)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("orders of user %d on goods %d: %w", userID, goodsID, err)
	}
	if mine != "" {
		seqs := strings.Split(mine, ",")
		seq, err := strconv.ParseInt(seqs[len(seqs)-1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("orders of user %d on goods %d: %q", userID, goodsID, mine)
		}
		return l.OrderOf(ctx, sale.OrderID(goodsID, seq))
	}
	var id int64
	err = l.SQL.R.QueryRowContext(ctx, `SELECT id FROM orders WHERE goods_id = ? AND user_id = ? ORDER BY id DESC LIMIT 1`, goodsID, userID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return l.OrderOf(ctx, id)
}
