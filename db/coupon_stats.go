package db

import (
	"context"
	"time"

	"github.com/seckill/seckill/db/model"
)

// CouponStats is a template with its live and durable figures and its reminder bookings.
type CouponStats struct {
	Coupon    *Coupon `json:"coupon"`
	Stock     int64   `json:"stock"`
	Remaining int64   `json:"remaining"`
	Grabbed   int64   `json:"grabbed"`
	DB        struct {
		Grabbed int64 `json:"grabbed"`
	} `json:"db"`
	Bookings   []BookingCount              `json:"bookings"`
	Deliveries map[string]map[string]int64 `json:"deliveries"`
}

// BookingsOf returns the number of bookings of (minutes, channel).
func (st *CouponStats) BookingsOf(minutes int, channel string) int64 {
	for _, b := range st.Bookings {
		if b.MinutesBefore == minutes && b.Channel == channel {
			return b.Count
		}
	}
	return 0
}

// TotalBookings is the number of booked (lead time, channel) pairs.
func (st *CouponStats) TotalBookings() int64 {
	var n int64
	for _, b := range st.Bookings {
		n += b.Count
	}
	return n
}

// CouponStats returns the figures of a template the actor manages.
func (s *Store) CouponStats(ctx context.Context, actor model.Claims, id int64) (*CouponStats, error) {
	c, err := s.ownCoupon(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	if err := s.fillLive(ctx, []*Coupon{c}); err != nil {
		return nil, err
	}
	return s.statsOf(ctx, c)
}

// ShopCouponStats lists the figures of every template the actor manages, newest first.
func (s *Store) ShopCouponStats(ctx context.Context, actor model.Claims) ([]*CouponStats, error) {
	cs, err := s.ShopCoupons(ctx, actor)
	if err != nil {
		return nil, err
	}
	out := make([]*CouponStats, 0, len(cs))
	for _, c := range cs {
		st, err := s.statsOf(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (s *Store) statsOf(ctx context.Context, c *Coupon) (*CouponStats, error) {
	st := &CouponStats{Coupon: c, Stock: c.Stock, Remaining: c.Remaining, Grabbed: c.Stock - c.Remaining}
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

// CouponCentre is what the shopper's coupon page shows: live and upcoming
// templates, the user's reminders for them and which channels they may book.
type CouponCentre struct {
	Now       time.Time
	Coupons   []*Coupon
	Reminders map[int64][]BookedReminder // by template
	Channels  map[string]string          // channel → why it cannot be booked ("" when it can)
}

// CouponCentre gathers the coupon page for userID (0 when nobody is logged in).
func (s *Store) CouponCentre(ctx context.Context, userID int64) (*CouponCentre, error) {
	cs, err := s.Coupons(ctx)
	if err != nil {
		return nil, err
	}
	out := &CouponCentre{Now: s.Now(), Coupons: cs, Reminders: map[int64][]BookedReminder{}, Channels: map[string]string{}}
	if userID == 0 {
		return out, nil
	}
	if out.Channels, err = s.ReminderChannels(ctx, userID); err != nil {
		return nil, err
	}
	rs, err := s.UserReminders(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		out.Reminders[r.CouponID] = append(out.Reminders[r.CouponID], r)
	}
	return out, nil
}
