package views

import "github.com/seckill/seckill/db/model"

// ConfirmView asks before something that cannot be undone: the question,
// the form that does it (Action, with Fields as hidden inputs) and the way
// back that leaves everything as it is.
type ConfirmView struct {
	Title     string // the page's title (its tab); the page asks Question once
	Question  string
	Detail    string
	Action    string // where the confirming form posts
	Fields    map[string]string
	Confirm   string // the confirming button's label
	Back      string // where "keep it" goes
	BackLabel string
	Danger    bool // a red confirming button
}

// ReceiptView is a paid (or since refunded) order's receipt; CouponTitle is
// the coupon it was paid with ("" for none).
type ReceiptView struct {
	Order       model.Order
	CouponTitle string
}

// RefundConfirm is the question before a shopper refunds a paid order.
func RefundConfirm(o model.Order) ConfirmView {
	return ConfirmView{
		Title:    "Refund this order?",
		Question: "Refund order " + orderNo(o.ID) + " for " + Money(o.PaidCents) + "?",
		Detail:   o.GoodsTitle + ". The money goes back to you; a coupon used on it comes back if it is still valid. This cannot be undone.",
		Action:   "/orders/" + i64(o.ID) + "/refund", Confirm: "Refund " + Money(o.PaidCents),
		Back: "/me/orders", BackLabel: "Keep it", Danger: true,
	}
}

// CancelConfirm is the question before a shopper cancels an unpaid order.
func CancelConfirm(o model.Order) ConfirmView {
	return ConfirmView{
		Title:    "Cancel this order?",
		Question: "Cancel order " + orderNo(o.ID) + " for " + Money(o.AmountCents) + "?",
		Detail:   o.GoodsTitle + ". The unit goes back on sale for others; this cannot be undone.",
		Action:   "/orders/" + i64(o.ID) + "/cancel", Confirm: "Cancel the order",
		Back: "/me/orders", BackLabel: "Keep it", Danger: true,
	}
}

// EndSaleConfirm is the question before a merchant ends a goods' or a
// slot's sale now; what is "goods" or "slot", base its admin URL.
func EndSaleConfirm(what, title, base string) ConfirmView {
	return ConfirmView{
		Title:    "End this sale now?",
		Question: "End the sale of “" + title + "” now?",
		Detail:   "Shoppers can no longer grab this " + what + "; the sale cannot be started again.",
		Action:   base + "/end", Fields: map[string]string{"confirmed": "1"}, Confirm: "End sale now",
		Back: base, BackLabel: "Keep it on sale", Danger: true,
	}
}
