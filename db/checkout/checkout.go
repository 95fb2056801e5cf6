// Package checkout closes the shopping loop across two areas: an order
// (goods, hot in Redis) paid with a coupon (coupon, durable in SQL), refunds,
// and the payment gateway's signed callback. It composes the goods and
// coupon services; no area imports it.
//
// An order and a coupon live in different stores (and different Redis
// Cluster slots), so they cannot change in one step. Pay claims the coupon
// in SQL first (a coupon claimed for this same order counts as claimed),
// then runs the order's pay script with the discount and the coupon; when
// the order could not be paid, or was paid already without this coupon, the
// coupon is released. A crash between the steps is repaired by SweepCoupons:
// a used coupon whose order ended unpaid (expired, cancelled, failed or
// refunded) or was paid without it goes back to unused.
package checkout

import (
	"context"
	"sort"
	"sync/atomic"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// Service pays orders with coupons, refunds them and settles gateway payments.
type Service struct {
	*backend.Backend
	Goods   *goods.Service
	Coupons *coupon.Service
	// PaymentSecret keys the gateway callback's signature (PAYMENT_SECRET or derived).
	PaymentSecret []byte
	// Payments is the payment provider (provider.go); without one the simulated pay stands.
	Payments Payments

	lastMismatches atomic.Int64 // found by the last reconciliation (reconcile.go)
	reconciled     atomic.Bool
}

// Pay pays the user's order, with the user coupon userCouponID when it is
// not 0: both the order (discount and paid amount) and the coupon (used,
// naming the order) change, or neither. Paying again answers the paid order
// unchanged.
func (s *Service) Pay(ctx context.Context, userID, orderID, userCouponID int64) (*model.Order, error) {
	if s.Payments.Provider != nil {
		// Shoppers pay at the provider: the simulated pay only answers an order paid already.
		o, err := s.Goods.Order(ctx, userID, orderID)
		if err != nil {
			return nil, err
		}
		if o.Status != model.OrderPaid {
			return nil, db.Errorf(db.ECONFLICT, "pay through the payment provider: POST /api/orders/%d/checkout", orderID)
		}
		return o, nil
	}
	if userCouponID == 0 {
		p, err := s.Goods.PayWith(ctx, userID, orderID, 0, 0)
		return p.Order, err
	}
	o, err := s.Goods.Order(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	if o.Status != model.OrderUnpaid {
		// Paid already (200, unchanged) or ended (409): the pay script says
		// which, and no coupon is claimed for an order that cannot take it.
		p, err := s.Goods.PayWith(ctx, userID, orderID, 0, 0)
		return p.Order, err
	}
	discount, err := s.Coupons.Claim(ctx, userID, userCouponID, orderID, o.AmountCents)
	if err != nil {
		return nil, err
	}
	p, err := s.Goods.PayWith(ctx, userID, orderID, discount, userCouponID)
	// Release only on a known answer: an error that is not the service's own
	// (a lost reply) may hide a payment that took the coupon; the sweep
	// decides that one once the order has settled.
	known := err != nil && db.ErrorCode(err) != db.EINTERNAL && db.ErrorCode(err) != db.EUNAVAILABLE
	if (err == nil && p.Order.UserCouponID != userCouponID) || known {
		if _, rerr := s.Coupons.Release(context.WithoutCancel(ctx), userCouponID, orderID); rerr != nil {
			s.Log.Warn("release a coupon the order did not take; the sweep will", "coupon", userCouponID, "order", orderID, "err", rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return p.Order, nil
}

// Refund refunds the user's paid order (the unit goes back on sale while
// the slot is live) and gives back the coupon it used: unused while still
// valid. Refunding again answers the refunded order; any other order is a conflict.
func (s *Service) Refund(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	o, now, err := s.refund(ctx, userID, orderID)
	if err == nil && now {
		s.refundProviderPaid(ctx, o, RefundShopper)
	}
	return o, err
}

// refund is Refund that also says whether this call refunded the order.
func (s *Service) refund(ctx context.Context, userID, orderID int64) (*model.Order, bool, error) {
	o, now, err := s.Goods.RefundNow(ctx, userID, orderID)
	if err != nil {
		return nil, false, err
	}
	if o.UserCouponID > 0 {
		if _, err := s.Coupons.Release(context.WithoutCancel(ctx), o.UserCouponID, o.ID); err != nil {
			s.Log.Warn("give back the coupon of a refunded order; the sweep will", "coupon", o.UserCouponID, "order", o.ID, "err", err)
		}
	}
	return o, now, nil
}

// SweepCoupons gives back every used coupon whose order ended unpaid
// (expired, cancelled, failed or refunded), was paid with another coupon or
// none, or does not exist; an order still unpaid keeps its claim (a pay may
// be under way). The store names the candidates in one indexed query (the
// used coupons whose order, as flushed, is not paid with them; the settled
// majority costs nothing), and each is confirmed against the order's live
// state before it is released. It answers how many it released.
func (s *Service) SweepCoupons(ctx context.Context) (int, error) {
	released := 0
	var after int64
	for {
		cands, err := s.sweepCandidates(ctx, after, 500)
		if err != nil || len(cands) == 0 {
			return released, err
		}
		for _, u := range cands {
			after = u.ID
			o, err := s.Goods.OrderOf(ctx, u.OrderID)
			switch {
			case db.ErrorCode(err) == db.ENOTFOUND:
			case err != nil:
				return released, err
			case o.Status == model.OrderUnpaid:
				continue
			case o.Status == model.OrderPaid && o.UserCouponID == u.ID:
				continue
			}
			ok, err := s.Coupons.Release(ctx, u.ID, u.OrderID)
			if err != nil {
				return released, err
			}
			if ok {
				released++
				s.Log.Info("released a coupon its order did not take", "coupon", u.ID, "order", u.OrderID)
			}
		}
	}
}

// sweepCandidates are the used coupons, with IDs above after, whose order the
// store does not show paid with them: not flushed yet, or flushed in
// another state (an order flushed unpaid may have ended since).
func (s *Service) sweepCandidates(ctx context.Context, after int64, limit int) ([]coupon.UsedCoupon, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT u.id, u.order_id FROM user_coupons u LEFT JOIN orders o ON o.id = u.order_id
		WHERE u.status = ? AND u.id > ? AND (o.id IS NULL OR o.status <> ? OR o.user_coupon_id <> u.id)
		ORDER BY u.id LIMIT ?`, model.CouponUsed, after, model.OrderPaid, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []coupon.UsedCoupon
	for rows.Next() {
		var u coupon.UsedCoupon
		if err := rows.Scan(&u.ID, &u.OrderID); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// ExpireCoupons marks expired the unused coupons past their validity.
func (s *Service) ExpireCoupons(ctx context.Context) (int64, error) {
	return s.Coupons.ExpireCoupons(ctx)
}

// Option is one of the user's coupons as the checkout page offers it for an
// order: its discount, or why it does not apply.
type Option struct {
	Coupon        *model.UserCoupon
	DiscountCents int64
	// Reason is empty when the coupon applies, else below_minimum, expired or used.
	Reason string
}

// Reasons a coupon does not apply to an order.
const (
	ReasonBelowMinimum = "below_minimum"
	ReasonExpired      = "expired"
	ReasonUsed         = "used"
)

// Checkout is what the checkout page shows: the order and the user's
// coupons, those that apply first (best discount first), then the others.
type Checkout struct {
	Order   *model.Order
	Options []Option
}

// ForOrder gathers the checkout of one of the user's orders.
func (s *Service) ForOrder(ctx context.Context, userID, orderID int64) (*Checkout, error) {
	o, err := s.Goods.Order(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	if o.GoodsTitle == "" { // an order read from Redis carries no title
		if g, err := s.Goods.Get(ctx, o.GoodsID); err == nil {
			o.GoodsTitle = g.Title
		}
	}
	if err := s.Coupons.FlushPending(ctx); err != nil {
		return nil, err
	}
	cs, err := s.Coupons.UserCoupons(ctx, userID)
	if err != nil {
		return nil, err
	}
	return &Checkout{Order: o, Options: Options(o, cs)}, nil
}

// Options ranks the user's coupons for the order: applicable ones by
// discount (best first), then the ones that do not apply with the reason.
// Coupons refused at grab (failed) are left out.
func Options(o *model.Order, cs []*model.UserCoupon) []Option {
	out := []Option{}
	for _, c := range cs {
		opt := Option{Coupon: c}
		switch {
		case c.Status == model.CouponUsed && c.OrderID == o.ID:
			opt.DiscountCents = model.CouponDiscount(c.Kind, c.Value, o.AmountCents)
		case c.Status == model.CouponUsed:
			opt.Reason = ReasonUsed
		case c.Status == model.CouponExpired:
			opt.Reason = ReasonExpired
		case c.Status != model.CouponUnused:
			continue
		case o.AmountCents < c.MinSpendCents:
			opt.Reason = ReasonBelowMinimum
		default:
			opt.DiscountCents = model.CouponDiscount(c.Kind, c.Value, o.AmountCents)
		}
		out = append(out, opt)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Reason == "") != (b.Reason == "") {
			return a.Reason == ""
		}
		return a.DiscountCents > b.DiscountCents
	})
	return out
}
