package handlers

import (
	"context"

	"github.com/seckill/seckill/db/model"
)

// Shelves are what the platform's pages (the front page, the merchant's
// dashboard, the wallet) read of the areas: each a narrow view an area's
// service satisfies, filled by Main from the areas it built. A page that
// shows several areas asks each for its shelf, never for its service.
type Shelves struct {
	Goods      GoodsShelf
	RedPackets RedPacketShelf
	Coupons    CouponShelf
}

// GoodsShelf is the goods a platform page shows: the live and coming slots,
// the caller's orders, a merchant's sales.
type GoodsShelf interface {
	// Version changes whenever the slots or goods a shopper reads could
	// answer differently ("": not held in memory, read afresh each time).
	Version(ctx context.Context) string
	Slots(ctx context.Context) ([]model.Slot, error)
	ShopperSlotGoods(ctx context.Context, by model.Claims, slotID int64) ([]model.Goods, error)
	MyOrders(ctx context.Context, userID int64) ([]model.Order, error)
	MerchantSales(ctx context.Context, by model.Claims) ([]model.SlotSales, error)
}

// RedPacketShelf is the red packets a platform page shows: the active ones,
// the caller's winnings, a merchant's own.
type RedPacketShelf interface {
	Active(ctx context.Context) ([]*model.RedPacket, error)
	Winnings(ctx context.Context, userID int64) ([]model.RedPacketWinning, error)
	Own(ctx context.Context, actor model.Claims) ([]*model.RedPacket, error)
}

// CouponShelf is the coupons a platform page shows: the templates on offer,
// the caller's claims, a merchant's figures.
type CouponShelf interface {
	List(ctx context.Context) ([]*model.Coupon, error)
	UserCoupons(ctx context.Context, userID int64) ([]*model.UserCoupon, error)
	ManagedStats(ctx context.Context, actor model.Claims) ([]*model.CouponStats, error)
}

// ReminderBook is one kind of sale's reminders as a shopper books them:
// coupon templates and goods alike (db/remind underneath), under
// /api/coupons/{id}/reminders and /api/goods/{id}/reminders.
type ReminderBook struct {
	List   func(ctx context.Context, userID, id int64) ([]model.BookedReminder, error)
	Book   func(ctx context.Context, userID, id int64, minutes int, channel string) ([]model.BookedReminder, error)
	Cancel func(ctx context.Context, userID, id int64, minutes int, channel string) ([]model.BookedReminder, error)
	// Mine lists every reminder of this kind the user booked.
	Mine func(ctx context.Context, userID int64) ([]model.BookedReminder, error)
}

// Reminders are the reminders area's handlers: a shopper's reminders before
// a coupon's or a goods' sale starts. It has no service of its own; each
// kind of sale lends its book.
type Reminders struct {
	*Site
	Coupons ReminderBook
	Goods   ReminderBook
}
