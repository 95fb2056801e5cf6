package views

import "github.com/seckill/seckill/db/model"

// CheckoutView is the checkout of one order: the order and the user's
// coupons, those that apply first (best discount first).
type CheckoutView struct {
	Order   model.Order
	Options []CheckoutOption
}

// CheckoutOption is one of the user's coupons for the order: its discount,
// or the reason it does not apply (below_minimum, expired, used).
type CheckoutOption struct {
	Coupon        model.UserCoupon
	DiscountCents int64
	Reason        string
}

// Best is the discount of the best coupon that applies (0: none applies).
func (v CheckoutView) Best() int64 {
	for _, o := range v.Options {
		if o.Reason == "" {
			return o.DiscountCents
		}
	}
	return 0
}

// bestID is the user coupon ID chosen at first: the best that applies (0: none).
func (v CheckoutView) bestID() int64 {
	for _, o := range v.Options {
		if o.Reason == "" {
			return o.Coupon.ID
		}
	}
	return 0
}

// reasonLabel is why a coupon does not apply, as a shopper reads it.
func reasonLabel(o CheckoutOption) string {
	switch o.Reason {
	case "below_minimum":
		return "Needs a spend of " + Money(o.Coupon.MinSpendCents)
	case "expired":
		return "Expired"
	case "used":
		return "Used already"
	}
	return o.Reason
}
