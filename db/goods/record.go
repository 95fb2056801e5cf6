package goods

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seckill/seckill/db/model"
)

// An order record is the order as Redis keeps it: its fields joined by "|",
// in the order of orderFields. The goods scripts write it (grab, pay, void,
// refund, expire...) and push the same string to the flush queue; Go reads it
// (decodeOrderRec) and writes it when it rebuilds a bucket (encode).
//
// orderFields is the one list of the fields: Lua gets a constant per field
// (F_SEQ = 1, F_USER = 2, ...; orderLua) and the Go codec reads and writes
// the same places, so neither side names a field by its number. A record
// holds a prefix of the fields: it may end after a field marked last (a
// grab writes through updated; a failed order adds the failure; a paid one
// all of them). Adding a field: add it here and to orderRec, write it in the
// scripts (by its F_ name) and add it to TestOrderRecordRoundTrip, which
// fails until both sides have it.
var orderFields = []orderField{
	{name: "seq", num: func(r *orderRec) *int64 { return &r.Seq }},
	{name: "user", num: func(r *orderRec) *int64 { return &r.User }},
	{name: "unit", num: func(r *orderRec) *int64 { return &r.Unit }},
	{name: "amount", num: func(r *orderRec) *int64 { return &r.Amount }},
	{name: "status", text: func(r *orderRec) *string { return &r.Status }},
	{name: "created", num: func(r *orderRec) *int64 { return &r.Created }},
	{name: "expires", num: func(r *orderRec) *int64 { return &r.Expires }},
	{name: "version", num: func(r *orderRec) *int64 { return &r.Version }},
	{name: "updated", num: func(r *orderRec) *int64 { return &r.Updated }, last: true},
	{name: "failure", text: func(r *orderRec) *string { return &r.Failure }, last: true},
	{name: "discount", num: func(r *orderRec) *int64 { return &r.Discount }},
	{name: "coupon", num: func(r *orderRec) *int64 { return &r.Coupon }},
	{name: "paid_at", num: func(r *orderRec) *int64 { return &r.PaidAt }, last: true},
}

// orderField is one field of an order record: a number or a text.
type orderField struct {
	name string // Lua names it F_ and its name in capitals
	num  func(r *orderRec) *int64
	text func(r *orderRec) *string
	last bool // a record may end after it
}

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

// orderRecEnds are the field counts a record may have (see orderField.last).
var orderRecEnds = func() map[int]bool {
	ends := map[int]bool{}
	for i, f := range orderFields {
		if f.last {
			ends[i+1] = true
		}
	}
	return ends
}()

// luaName is the Lua constant naming the field's place.
func (f orderField) luaName() string { return "F_" + strings.ToUpper(f.name) }

// orderLua is the Lua side of orderFields, part of goodsLua: a constant per
// field's place, the field names in order (ORDER_FIELDS) and orderRecord,
// which joins fields into a record and refuses a record that may not end
// where it does (a field written on one side only).
var orderLua = func() string {
	var names, places, quoted, ends []string
	for i, f := range orderFields {
		names = append(names, f.luaName())
		places = append(places, strconv.Itoa(i+1))
		quoted = append(quoted, "'"+f.name+"'")
		if f.last {
			ends = append(ends, "["+strconv.Itoa(i+1)+"] = true")
		}
	}
	return `
-- The places of an order record's fields (generated from orderFields in record.go).
local ` + strings.Join(names, ", ") + ` = ` + strings.Join(places, ", ") + `
local ORDER_FIELDS = {` + strings.Join(quoted, ", ") + `}
local ORDER_ENDS = {` + strings.Join(ends, ", ") + `}

-- orderRecord joins an order's fields (f[F_SEQ], f[F_USER], ...) into its record.
local function orderRecord(f)
	if not ORDER_ENDS[#f] then
		return error('order record of ' .. #f .. ' fields: a record may not end there (record.go)')
	end
	return table.concat(f, '|')
end
`
}()

// decodeOrderRec reads an order record.
func decodeOrderRec(rec string) (orderRec, error) {
	var r orderRec
	n := strings.Count(rec, "|") + 1
	if !orderRecEnds[n] {
		return r, fmt.Errorf("order record %q: %d fields, which no record has (record.go)", rec, n)
	}
	for i, f := range orderFields[:n] {
		v, rest, _ := strings.Cut(rec, "|")
		rec = rest
		if f.text != nil {
			*f.text(&r) = v
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("order record field %d (%s): %w", i+1, f.name, err)
		}
		*f.num(&r) = x
	}
	return r, nil
}

// encode writes the record: its fields up to the shortest end that holds
// every field that is not zero (a grab's nine; ten with a failure; all of
// them once paid), as the scripts do.
func (r *orderRec) encode() string {
	n := 0
	for i, f := range orderFields {
		if f.text != nil && *f.text(r) != "" || f.num != nil && *f.num(r) != 0 {
			n = i + 1
		}
	}
	for !orderRecEnds[n] {
		n++
	}
	b := make([]byte, 0, 96)
	for i, f := range orderFields[:n] {
		if i > 0 {
			b = append(b, '|')
		}
		if f.text != nil {
			b = append(b, *f.text(r)...)
		} else {
			b = strconv.AppendInt(b, *f.num(r), 10)
		}
	}
	return string(b)
}

// order is the order the record of goodsID describes.
func (r *orderRec) order(goodsID int64) *model.Order {
	o := &model.Order{
		ID: OrderID(goodsID, r.Seq), GoodsID: goodsID, UserID: r.User, Unit: r.Unit, AmountCents: r.Amount, Status: r.Status,
		CreatedAt: msTime(r.Created), ExpiresAt: msTime(r.Expires), Version: r.Version, UpdatedAt: msTime(r.Updated),
		Failure: r.Failure, DiscountCents: r.Discount, UserCouponID: r.Coupon,
	}
	fillPaid(o, r.PaidAt, 0)
	return o
}
