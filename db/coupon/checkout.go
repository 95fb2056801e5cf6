package coupon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// claimable is a user coupon with its template's terms, as a checkout reads it.
type claimable struct {
	userID, orderID int64
	status          string
	validUntil      time.Time
	kind            string
	value, minSpend int64
}

func (s *Service) claimable(ctx context.Context, id int64) (*claimable, error) {
	var c claimable
	var until int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT u.user_id, u.order_id, u.status, u.valid_until_ms, c.kind, c.value, c.min_spend_cents
		FROM user_coupons u JOIN coupons c ON c.id = u.coupon_id WHERE u.id = ?`, id).
		Scan(&c.userID, &c.orderID, &c.status, &until, &c.kind, &c.value, &c.minSpend)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "coupon %d not found", id)
	}
	c.validUntil = fromMS(until)
	return &c, err
}

// Claim marks the user's coupon used for orderID, paying amountCents, and
// answers its discount. A coupon claimed for this same order already counts
// as claimed (a retried pay). A coupon used for another order is a
// conflict, one past its validity expired, one whose minimum the amount does
// not reach invalid, another user's not found. A coupon grabbed but not
// flushed yet is flushed first. The caller (the checkout) pays the order
// next and releases the coupon when the order was not paid with it.
func (s *Service) Claim(ctx context.Context, userID, userCouponID, orderID, amountCents int64) (int64, error) {
	c, err := s.claimable(ctx, userCouponID)
	if db.ErrorCode(err) == db.ENOTFOUND && userCouponID > userCouponIDMultiple {
		if err = s.flushTemplate(ctx, userCouponID/userCouponIDMultiple); err != nil {
			return 0, err
		}
		c, err = s.claimable(ctx, userCouponID)
	}
	if err != nil {
		return 0, err
	}
	for attempt := 0; ; attempt++ {
		if c.userID != userID {
			return 0, db.Errorf(db.ENOTFOUND, "coupon %d not found", userCouponID)
		}
		discount := model.CouponDiscount(c.kind, c.value, amountCents)
		now := s.Now()
		switch {
		case c.status == model.CouponUsed && c.orderID == orderID:
			return discount, nil
		case c.status == model.CouponUsed:
			return 0, db.Errorf(db.ECONFLICT, "this coupon has been used already")
		case c.status == model.CouponExpired || !now.Before(c.validUntil):
			return 0, db.Errorf(db.EEXPIRED, "this coupon expired on %s", c.validUntil.Format(time.RFC3339))
		case amountCents < c.minSpend:
			return 0, db.Errorf(db.EINVALID, "this coupon needs a spend of at least %d cents", c.minSpend)
		}
		if attempt > 0 {
			return 0, db.Errorf(db.ECONFLICT, "this coupon changed meanwhile; try again")
		}
		res, err := s.SQL.W.ExecContext(ctx, `UPDATE user_coupons SET status = ?, order_id = ?, used_ms = ?
			WHERE id = ? AND user_id = ? AND status = ? AND valid_until_ms > ?`,
			model.CouponUsed, orderID, now.UnixMilli(), userCouponID, userID, model.CouponUnused, now.UnixMilli())
		if err != nil {
			return 0, fmt.Errorf("claim coupon %d: %w", userCouponID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return discount, nil
		}
		// Another claim (or the expiry) got there first: decide on what it left.
		if c, err = s.claimable(ctx, userCouponID); err != nil {
			return 0, err
		}
	}
}

// Release gives back a coupon claimed for orderID: unused again while
// valid, else expired. A coupon not used for that order is left alone;
// it reports whether it changed one.
func (s *Service) Release(ctx context.Context, userCouponID, orderID int64) (bool, error) {
	now := s.Now().UnixMilli()
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE user_coupons
		SET status = CASE WHEN valid_until_ms > ? THEN 'unused' ELSE 'expired' END, order_id = 0, used_ms = 0
		WHERE id = ? AND order_id = ? AND status = ?`, now, userCouponID, orderID, model.CouponUsed)
	if err != nil {
		return false, fmt.Errorf("release coupon %d: %w", userCouponID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ExpireCoupons marks expired every unused coupon whose validity has passed,
// and answers how many: the periodic coupon:expire task.
func (s *Service) ExpireCoupons(ctx context.Context) (int64, error) {
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE user_coupons SET status = ? WHERE status = ? AND valid_until_ms <= ?`,
		model.CouponExpired, model.CouponUnused, s.Now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("expire coupons: %w", err)
	}
	return res.RowsAffected()
}

// UsedCoupon is a used coupon and the order it paid for.
type UsedCoupon struct {
	ID, OrderID int64
}

// FlushPending moves every template's queued grabs to the store now, so a
// coupon grabbed a moment ago is listed (the checkout page); while another
// flusher holds a template's lane it waits, up to about a second.
func (s *Service) FlushPending(ctx context.Context) error {
	err := s.FlushGrabs(backend.WaitLanes(ctx, time.Second))
	if errors.Is(err, backend.ErrLaneBusy) {
		return nil // the flusher at work lists them shortly
	}
	return err
}

// flushTemplate flushes one template's queued grabs under its lane's lease,
// waiting (up to 5 s) while another flusher holds it (that one drains this
// queue too), so a coupon grabbed a moment ago can be used.
func (s *Service) flushTemplate(ctx context.Context, couponID int64) error {
	q := grabQueue(couponID)
	_, err := s.Flush(backend.WaitLanes(ctx, 5*time.Second), q, func(tx *sql.Tx, recs []string) error { return s.applyGrabs(ctx, tx, couponID, recs) })
	if errors.Is(err, backend.ErrLaneBusy) {
		return db.Errorf(db.EUNAVAILABLE, "coupons are being flushed; try again shortly")
	}
	return err
}
