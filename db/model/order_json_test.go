package model

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The hand-written encoding of an order equals encoding/json's from the
// tags, for orders with every field set (titles that need escaping too) and
// with the optional ones empty.
func TestOrderJSONMatchesTags(t *testing.T) {
	at := time.Date(2026, 12, 1, 3, 4, 5, 120_000_000, time.UTC)
	full := Order{ID: 3_000_000_009, GoodsID: 3, UserID: 42, AmountCents: 4999, Status: OrderFailed, Unit: 7,
		CreatedAt: at, ExpiresAt: at.Add(30 * time.Minute), UpdatedAt: at.Add(time.Second), GoodsTitle: "Phone",
		Failure: FailureSoldTwice, Version: 3, DiscountCents: 500, PaidCents: 4499, UserCouponID: 9_000_000_001,
		PaidAt: &at, RefundedAt: &at}
	v := reflect.ValueOf(full)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("the fixture leaves %s empty: set it, and encode it in MarshalJSON", v.Type().Field(i).Name)
		}
	}
	type tagged Order // the same fields and tags, without MarshalJSON
	for _, o := range []Order{
		full,
		{ID: 1, GoodsID: 1, UserID: 1, Status: OrderUnpaid, CreatedAt: at, ExpiresAt: at, UpdatedAt: at},
		{GoodsTitle: `<b>"Tea" & 茶</b>` + "\n\\", Failure: "x\u2028y", CreatedAt: at.In(time.FixedZone("", 3600))},
		{GoodsTitle: `say "hi"`, Failure: `back\slash`}, {GoodsTitle: "tab\there"},
		{GoodsTitle: "a<b", Failure: "c&d"}, {GoodsTitle: "e>f", Failure: "\x7f\x01"},
		{},
	} {
		want, err := json.Marshal(tagged(o))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(o)
		if err != nil || string(got) != string(want) {
			t.Fatalf("MarshalJSON\n got %s (%v)\nwant %s", got, err, want)
		}
	}
}
