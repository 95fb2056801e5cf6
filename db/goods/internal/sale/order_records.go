package sale

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seckill/seckill/db/model"
)

// StockEvent is the live event for a goods' remaining stock.
type StockEvent struct {
	Type      string `json:"type"` // "stock"
	GoodsID   int64  `json:"goods_id"`
	Remaining int64  `json:"remaining"`
	// Version orders the goods' stock events (Redis's clock when the stock
	// was read): watchers keep the highest, so events that reach them out of
	// order, or from two web processes, never move the stock back.
	Version int64 `json:"version"`
}

// OrderEvent is the live event a user gets on each change of one of their orders.
type OrderEvent struct {
	Type  string       `json:"type"` // "order"
	Order *model.Order `json:"order"`
}

// ParseOrderRecord reads a record written by the goods scripts (see record.go).
func ParseOrderRecord(goodsID int64, rec string) (*model.Order, error) {
	r, err := DecodeOrderRec(rec)
	if err != nil {
		return nil, fmt.Errorf("goods %d: %w", goodsID, err)
	}
	return r.order(goodsID), nil
}

// FillPaid sets what an order paid and when from its status: a paid,
// refunded or refund-due order paid its amount less the discount, at paidAt
// (0: an order paid before checkout kept the time, its last update);
// a refunded one was refunded at refundedAt (0: its last update).
func FillPaid(o *model.Order, paidAt, refundedAt int64) {
	if o.Status != model.OrderPaid && o.Status != model.OrderRefunded && o.Failure != model.FailureRefundDue {
		o.DiscountCents, o.UserCouponID = 0, 0
		return
	}
	o.PaidCents = o.AmountCents - o.DiscountCents
	at := o.UpdatedAt
	if paidAt > 0 {
		at = MsTime(paidAt)
	}
	o.PaidAt = &at
	if o.Status == model.OrderRefunded {
		r := o.UpdatedAt
		if refundedAt > 0 {
			r = MsTime(refundedAt)
		}
		o.RefundedAt = &r
	}
}

// answer is a goods script's reply (see goodsLua): a status word and, for an
// answer about an order, the remaining stock, the slot ID, the stock's
// version and the record.
type answer struct {
	Code                     string
	Remaining, Slot, Version int64
	Rec                      string
}

// ParseAnswer reads a script's reply, "word" or "word:remaining:slot:version:record".
func ParseAnswer(goodsID int64, reply string) (answer, error) {
	code, rest, about := strings.Cut(reply, ":")
	if !about {
		return answer{Code: code}, nil
	}
	// Built only when needed: a win reads an answer on every request.
	bad := func() error { return fmt.Errorf("goods %d: unreadable script answer %q", goodsID, reply) }
	remaining, rest, _ := strings.Cut(rest, ":")
	slot, rec, ok := strings.Cut(rest, ":")
	if !ok {
		return answer{}, bad()
	}
	a := answer{Code: code, Rec: rec}
	// The version sits before the record; an answer remembered by a release
	// without it (a memo of at most grabMemoTTL) has the record right there.
	if v, r, found := strings.Cut(rec, ":"); found && !strings.Contains(v, "|") {
		var err error
		if a.Version, err = strconv.ParseInt(v, 10, 64); err != nil {
			return answer{}, bad()
		}
		a.Rec = r
	}
	var err1, err2 error
	a.Remaining, err1 = strconv.ParseInt(remaining, 10, 64)
	a.Slot, err2 = strconv.ParseInt(slot, 10, 64)
	if err1 != nil || err2 != nil {
		return answer{}, bad()
	}
	return a, nil
}
