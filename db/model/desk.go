package model

import (
	"fmt"
	"strings"
	"time"
)

// DeskOrder is one order as the merchant orders desk lists it: the order
// with its number, goods title and shopper's name.
type DeskOrder struct {
	ID            int64      `json:"id"`
	Number        string     `json:"number"`
	GoodsID       int64      `json:"goods_id"`
	GoodsTitle    string     `json:"goods_title"`
	UserID        int64      `json:"user_id"`
	Username      string     `json:"username"`
	Status        string     `json:"status"`
	Failure       string     `json:"failure,omitempty"`
	AmountCents   int64      `json:"amount_cents"`
	DiscountCents int64      `json:"discount_cents"`
	PaidCents     int64      `json:"paid_cents"`
	UserCouponID  int64      `json:"user_coupon_id,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	PaidAt        *time.Time `json:"paid_at,omitempty"`
	RefundedAt    *time.Time `json:"refunded_at,omitempty"`
	// UpdatedAt is the order's last change: when a cancelled, expired or
	// failed order ended. Not part of the contract's list.
	UpdatedAt time.Time `json:"-"`
}

// DeskOrderOf is o as the desk shows it, for the shopper username.
func DeskOrderOf(o *Order, username string) DeskOrder {
	return DeskOrder{ID: o.ID, Number: OrderNumber(o.ID), GoodsID: o.GoodsID, GoodsTitle: o.GoodsTitle, UserID: o.UserID,
		Username: username, Status: o.Status, Failure: o.Failure, AmountCents: o.AmountCents, DiscountCents: o.DiscountCents,
		PaidCents: o.PaidCents, UserCouponID: o.UserCouponID, CreatedAt: o.CreatedAt, PaidAt: o.PaidAt, RefundedAt: o.RefundedAt,
		UpdatedAt: o.UpdatedAt}
}

// Actors of an order's history: who made a change.
const (
	ActorShopper  = "shopper"
	ActorMerchant = "merchant"
	ActorAdmin    = "admin"
	ActorGateway  = "gateway"
	ActorSystem   = "system"
	ActorUnknown  = "unknown"
)

// OrderStep is one step of an order's history on the desk.
type OrderStep struct {
	At     time.Time `json:"at"`
	Status string    `json:"status"` // created, paid, cancelled, expired, failed or refunded
	Actor  string    `json:"actor"`  // one of the Actor constants
	// ActorName is the account that made the change, when one did and it is known.
	ActorName string `json:"actor_name,omitempty"`
	// Detail says more: the coupon and discount of a payment, a refund's reason, a failure.
	Detail string `json:"detail,omitempty"`
}

// OrderStatuses are every status an order may have, for filters.
var OrderStatuses = []string{OrderUnpaid, OrderPaid, OrderExpired, OrderCancelled, OrderFailed, OrderRefunded}

// Yuan formats cents as currency units with two decimals, "9.90", as exports write amounts.
func Yuan(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// CouponClaim is one grab of a coupon template as its merchant sees it: who
// holds it, and what became of it.
type CouponClaim struct {
	UserCouponID int64     `json:"user_coupon_id"`
	UserID       int64     `json:"user_id"`
	Username     string    `json:"username"`
	Status       string    `json:"status"` // unused, used or expired
	GrabbedAt    time.Time `json:"grabbed_at"`
	ValidUntil   time.Time `json:"valid_until"`
	OrderID      int64     `json:"order_id,omitempty"` // the order a used coupon paid for
}

// UsernameMatches reports whether a username matches a desk search: empty
// matches all, else the name or its start, in any case.
func UsernameMatches(username, q string) bool {
	q = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(q), "@"))
	return q == "" || strings.HasPrefix(strings.ToLower(username), q)
}
