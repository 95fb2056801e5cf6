package handlers

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/seckill/seckill/db"
)

func TestGoodsBodyNeedsPrices(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		missing []string // fields reported as required
		price   int64
	}{
		{"both", `{"price_cents": 1000, "seckill_price_cents": 500}`, nil, 1000},
		{"both free", `{"price_cents": 0, "seckill_price_cents": 0}`, nil, 0},
		{"no list price", `{"seckill_price_cents": 500}`, []string{"price_cents"}, 0},
		{"no seckill price", `{"price_cents": 1000}`, []string{"seckill_price_cents"}, 1000},
		{"null price", `{"price_cents": null, "seckill_price_cents": 500}`, []string{"price_cents"}, 0},
		{"neither", `{"title": "Phone", "stock": 3}`, []string{"price_cents", "seckill_price_cents"}, 0},
	} {
		var b goodsBody
		if err := json.Unmarshal([]byte(tc.body), &b); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		in, err := b.input(false)
		var fe *db.InvalidFields
		switch {
		case len(tc.missing) == 0 && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case len(tc.missing) > 0 && (!errors.As(err, &fe) || len(fe.Fields) != len(tc.missing) || db.ErrorCode(err) != db.EINVALID):
			t.Errorf("%s: error %v, want %v required", tc.name, err, tc.missing)
		}
		for _, f := range tc.missing {
			if fe != nil && fe.Fields[f] != "is required" {
				t.Errorf("%s: %s: got %q, want \"is required\"", tc.name, f, fe.Fields[f])
			}
		}
		if err == nil && in.PriceCents != tc.price {
			t.Errorf("%s: price %d, want %d", tc.name, in.PriceCents, tc.price)
		}
	}
}
