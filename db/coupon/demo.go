package coupon

import (
	"context"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// SeedDemo adds, when there are no coupons yet, three coupons owned by
// owner: one opening 70 minutes from now (every lead time of the reminder
// picker, 5 to 60 minutes, can still be booked), one opening in ten minutes
// (book the 5-minute reminder and watch it arrive) and one live now.
func (s *Service) SeedDemo(ctx context.Context, owner *model.User) error {
	var n int64
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM coupons`).Scan(&n); err != nil || n > 0 {
		return err
	}
	now := s.Now().Truncate(time.Minute)
	for _, in := range []model.CouponInput{
		{Title: "Weekend ¥20 off", Kind: model.CouponAmountOff, Value: 2000, MinSpendCents: 10000, Stock: 200, LimitPerUser: 1,
			GrabStartAt: now.Add(70 * time.Minute), GrabEndAt: now.Add(3 * time.Hour), ValidDays: 7},
		{Title: "Early bird ¥5 off", Kind: model.CouponAmountOff, Value: 500, Stock: 100, LimitPerUser: 1,
			GrabStartAt: now.Add(10 * time.Minute), GrabEndAt: now.Add(2 * time.Hour), ValidDays: 7},
		{Title: "15% off everything", Kind: model.CouponPercentOff, Value: 15, Stock: 500, LimitPerUser: 2,
			GrabStartAt: now.Add(-time.Minute), GrabEndAt: now.Add(db.MaxSlotLength - time.Minute), ValidDays: 14},
	} {
		if _, err := s.Create(ctx, owner.ID, in); err != nil {
			return err
		}
	}
	return nil
}
