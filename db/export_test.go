package db

import (
	"context"
	"database/sql"
	"time"
)

// Test-only doors into the goods internals, for the external db_test package.

// GrabWithRequestID runs the grab script under a chosen request ID, as a go-redis retry would.
func (s *Store) GrabWithRequestID(ctx context.Context, userID, goodsID int64, requestID string) (*Order, error) {
	return s.grab(ctx, userID, goodsID, requestID, false)
}

// PayAt pays as if the clock read now.
func (s *Store) PayAt(ctx context.Context, userID, orderID int64, now time.Time) (*Order, error) {
	return s.payOrder(ctx, userID, orderID, now)
}

// ExpireAt expires as if the clock read now.
func (s *Store) ExpireAt(ctx context.Context, orderID int64, now time.Time) error {
	return s.expireOrder(ctx, orderID, now)
}

// MoveOrderBatch moves one batch of the goods' order records to processing
// and stops there, as a flush killed between the move and the commit would.
func (s *Store) MoveOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	q := goodsQueue(goodsID)
	recs, err := s.TakeBatch(ctx, q)
	return len(recs), err
}

// ApplyOrderBatch writes the batch now in processing to SQLite and commits,
// but leaves it in processing, as a flush killed between the commit and the release would.
func (s *Store) ApplyOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	q := goodsQueue(goodsID)
	recs, err := s.Redis.LRange(ctx, q.Processing, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	return len(recs), s.SQL.Tx(ctx, func(tx *sql.Tx) error { return s.applyOrders(ctx, goodsID)(tx, recs) })
}

// GoodsKey names one of the goods' Redis keys ("fresh", "free", "info", "pending", ...).
func GoodsKey(goodsID int64, name string) string { return goodsTag(goodsID) + ":" + name }

// ActiveGoods lists the goods the flush, sync and sweep visit.
func (s *Store) ActiveGoods(ctx context.Context) ([]int64, error) { return s.activeGoods(ctx) }

// OnLiveLoad calls f each time a grab's load of missing goods starts reading SQLite.
func (s *Store) OnLiveLoad(f func(goodsID int64)) { s.onLiveLoad = f }
