package coupon

import (
	"context"

	"github.com/seckill/seckill/db/model"
)

// Stats returns the figures of a template the actor manages.
func (s *Service) Stats(ctx context.Context, actor model.Claims, id int64) (*model.CouponStats, error) {
	c, err := s.owned(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	if err := s.fillLive(ctx, []*model.Coupon{c}); err != nil {
		return nil, err
	}
	return s.statsOf(ctx, c)
}

// ManagedStats lists the figures of every template the actor manages, newest first.
func (s *Service) ManagedStats(ctx context.Context, actor model.Claims) ([]*model.CouponStats, error) {
	cs, err := s.Managed(ctx, actor)
	if err != nil {
		return nil, err
	}
	out := make([]*model.CouponStats, 0, len(cs))
	for _, c := range cs {
		st, err := s.statsOf(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (s *Service) statsOf(ctx context.Context, c *model.Coupon) (*model.CouponStats, error) {
	st := &model.CouponStats{Coupon: c, Stock: c.Stock, Remaining: c.Remaining, Grabbed: c.Stock - c.Remaining}
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID).Scan(&st.DB.Grabbed); err != nil {
		return nil, err
	}
	var err error
	if st.Bookings, err = s.bookingCounts(ctx, c.ID); err != nil {
		return nil, err
	}
	if st.Deliveries, err = s.DeliveryCounts(ctx, c.ID); err != nil {
		return nil, err
	}
	return st, nil
}

// Centre gathers the coupon page for userID (0 when nobody is logged in).
func (s *Service) Centre(ctx context.Context, userID int64) (*model.CouponCentre, error) {
	cs, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := &model.CouponCentre{Now: s.Now(), Coupons: cs, Reminders: map[int64][]model.BookedReminder{}, Channels: map[string]string{}}
	if userID == 0 {
		return out, nil
	}
	if out.Channels, err = s.Channels(ctx, userID); err != nil {
		return nil, err
	}
	rs, err := s.UserReminders(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out.Reminders[r.CouponID] = append(out.Reminders[r.CouponID], r)
	}
	if out.Held, err = s.held(ctx, userID, cs); err != nil {
		return nil, err
	}
	return out, nil
}
