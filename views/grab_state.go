package views

import (
	"strings"

	"github.com/seckill/seckill/db/model"
)

// Grab button states of a seckill goods, as static/goods.js also computes
// them: the page renders one, the script keeps it current.
const (
	GrabUpcoming     = "upcoming"
	GrabLive         = "live"
	GrabSoldOut      = "sold_out"
	GrabLimitReached = "limit_reached"
	GrabEnded        = "ended"
)

// GrabState is the state of a goods' Grab button for a shopper who holds
// held live (unpaid or paid) orders of it. Ended and upcoming come from the
// sale window; a live sale with nothing left is sold out before the
// shopper's own limit counts.
func GrabState(g model.Goods, held int64) string {
	switch {
	case g.State == model.SlotEnded:
		return GrabEnded
	case g.State == model.SlotUpcoming:
		return GrabUpcoming
	case g.Remaining <= 0:
		return GrabSoldOut
	case g.LimitPerUser > 0 && held >= g.LimitPerUser:
		return GrabLimitReached
	}
	return GrabLive
}

// grabLabel is the Grab button's text in a state.
func grabLabel(state string, g model.Goods) string {
	switch state {
	case GrabSoldOut:
		return "Sold out"
	case GrabLimitReached:
		return "Limit reached"
	case GrabEnded:
		return "Sale ended"
	}
	return "Grab for " + Money(g.SeckillPriceCents)
}

// HeldByGoods counts a shopper's live (unpaid or paid) orders per goods:
// what the per-customer limit counts.
func HeldByGoods(orders []model.Order) map[int64]int64 {
	held := map[int64]int64{}
	for _, o := range orders {
		if o.Status == model.OrderUnpaid || o.Status == model.OrderPaid {
			held[o.GoodsID]++
		}
	}
	return held
}

// orderNo is an order as a shopper reads it: "#G12-0007".
func orderNo(id int64) string { return "#" + model.OrderNumber(id) }

// stateBadge is a goods card's badge text in a state.
func stateBadge(state string) string {
	switch state {
	case GrabUpcoming:
		return "Soon"
	case GrabSoldOut:
		return "Sold out"
	case GrabLimitReached:
		return "Limit reached"
	case GrabEnded:
		return "Ended"
	}
	return "Live"
}

// stateLabel is how a state or status code reads on a badge: "live" →
// "Live", "sold_out" → "Sold out". Scripts that redraw a badge use the same
// rule (seckill.stateLabel in static/app.js).
func stateLabel(code string) string {
	if code == "" {
		return ""
	}
	s := strings.ReplaceAll(code, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// couponLimitReached reports whether a shopper holding held coupons of c may grab no more.
func couponLimitReached(c *model.Coupon, held int64) bool {
	return c.LimitPerUser > 0 && held >= c.LimitPerUser
}

// couponGrabLabel is a coupon's Grab button text.
func couponGrabLabel(c *model.Coupon, held int64) string {
	switch {
	case c.Remaining <= 0:
		return "Sold out"
	case couponLimitReached(c, held):
		return "Limit reached"
	case c.State == model.CouponEnded:
		return "Ended"
	}
	return "Grab"
}
