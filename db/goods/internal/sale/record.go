package sale

import (
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// An order record is the order as Redis keeps it: its fields joined by "|",
// in the order of OrderFields. The goods scripts write it (grab, pay, void,
// refund, expire...) and push the same string to the flush queue; Go reads it
// (decodeOrderRec) and writes it when it rebuilds a bucket (encode).
//
// OrderFields is the one list of the fields (an rdb.Record, exported as the
// record's format: the order ledger's scripts write it too): Lua gets a
// constant per field (F_SEQ = 1, F_USER = 2, ...; orderLua) and the Go codec
// reads and writes the same places, so neither side names a field by its
// number. A record holds a prefix of the fields: it may end after a field
// marked Last (a grab writes through updated; a failed order adds the
// failure; a paid one all of them). Adding a field: add it here and to orderRec, write it in the
// scripts (by its F_ name) and add it to TestOrderRecordRoundTrip (db/goods/internal/orders), which
// fails until both sides have it.
var OrderFields = rdb.NewRecord("order", "F_", "|",
	rdb.Field[orderRec]{Name: "seq", Int: func(r *orderRec) *int64 { return &r.Seq }},
	rdb.Field[orderRec]{Name: "user", Int: func(r *orderRec) *int64 { return &r.User }},
	rdb.Field[orderRec]{Name: "unit", Int: func(r *orderRec) *int64 { return &r.Unit }},
	rdb.Field[orderRec]{Name: "amount", Int: func(r *orderRec) *int64 { return &r.Amount }},
	rdb.Field[orderRec]{Name: "status", Text: func(r *orderRec) *string { return &r.Status }},
	rdb.Field[orderRec]{Name: "created", Int: func(r *orderRec) *int64 { return &r.Created }},
	rdb.Field[orderRec]{Name: "expires", Int: func(r *orderRec) *int64 { return &r.Expires }},
	rdb.Field[orderRec]{Name: "version", Int: func(r *orderRec) *int64 { return &r.Version }},
	rdb.Field[orderRec]{Name: "updated", Int: func(r *orderRec) *int64 { return &r.Updated }, Last: true},
	rdb.Field[orderRec]{Name: "failure", Text: func(r *orderRec) *string { return &r.Failure }, Last: true},
	rdb.Field[orderRec]{Name: "discount", Int: func(r *orderRec) *int64 { return &r.Discount }},
	rdb.Field[orderRec]{Name: "coupon", Int: func(r *orderRec) *int64 { return &r.Coupon }},
	rdb.Field[orderRec]{Name: "paid_at", Int: func(r *orderRec) *int64 { return &r.PaidAt }},
)

// orderRec is an order record's fields (times in unix ms).
type orderRec struct {
	Seq, User, Unit, Amount int64
	Status                  string
	Created, Expires        int64
	Version, Updated        int64
	Failure                 string // model.FailureSoldTwice or model.FailureRefundDue; "" for none
	Discount, Coupon        int64  // cents; the user coupon ID (0: none)
	PaidAt                  int64  // 0: not paid (or paid before checkout kept the time: its last update)
}

// orderLua is the Lua side of OrderFields, part of goodsLua: a constant per
// field's place (F_SEQ, F_USER, ...), ORDER_FIELDS, the names in order, and
// orderRecord(f), which joins fields into a record and refuses one that may
// not end where it does (a field written on one side only).
var orderLua = OrderFields.Lua()

// DecodeOrderRec reads an order record.
func DecodeOrderRec(rec string) (orderRec, error) { return OrderFields.Decode(rec) }

// encode writes the record: its fields up to the shortest end that holds
// every field that is not zero (a grab's nine; ten with a failure; all of
// them once paid), as the scripts do.
func (r *orderRec) encode() string { return OrderFields.Encode(r) }

// order is the order the record of goodsID describes.
func (r *orderRec) order(goodsID int64) *model.Order {
	o := &model.Order{
		ID: OrderID(goodsID, r.Seq), GoodsID: goodsID, UserID: r.User, Unit: r.Unit, AmountCents: r.Amount, Status: r.Status,
		CreatedAt: MsTime(r.Created), ExpiresAt: MsTime(r.Expires), Version: r.Version, UpdatedAt: MsTime(r.Updated),
		Failure: r.Failure, DiscountCents: r.Discount, UserCouponID: r.Coupon,
	}
	FillPaid(o, r.PaidAt, 0)
	return o
}
