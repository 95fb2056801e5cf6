package handlers

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/seckill/seckill/views"
)

// The shards field reaches the service from the JSON body and from the
// admin form; left out (or blank) it is nil (1 on create, unchanged on
// update), a value sent is passed on as it is, for the service to check,
// and a form value that is no whole number is a field error.
func TestGoodsShardsInput(t *testing.T) {
	for body, want := range map[string]string{`, "shards": 3`: "3", ``: "left out", `, "shards": null`: "left out", `, "shards": 0`: "0", `, "shards": -1`: "-1"} {
		var b goodsBody
		if err := json.Unmarshal([]byte(`{"price_cents": 1, "seckill_price_cents": 1`+body+`}`), &b); err != nil {
			t.Fatal(err)
		}
		in, err := b.input(false)
		if err != nil || optional(in.Shards) != want {
			t.Fatalf("%s: shards %s (%v), want %s", body, optional(in.Shards), err, want)
		}
	}
	for form, want := range map[string]string{"3": "3", "": "left out", " 2 ": "2", "0": "0", "-1": "-1"} {
		in, errs := goodsFormInput(views.GoodsForm{Price: "1", SeckillPrice: "1", Stock: "9", Shards: form}, 1)
		if len(errs) != 0 || optional(in.Shards) != want {
			t.Fatalf("form %q: shards %s %v, want %s", form, optional(in.Shards), errs, want)
		}
	}
	if _, errs := goodsFormInput(views.GoodsForm{Price: "1", SeckillPrice: "1", Stock: "9", Shards: "three"}, 1); errs["shards"] == "" {
		t.Fatalf("shards \"three\": no field error (%v)", errs)
	}
}

// The goods form's expected demand stands for a shard count (normal 1, hot 4,
// very hot 8); a number in the advanced field wins; an unknown demand is a
// field error. The API's `shards` is untouched by it.
func TestGoodsDemandToShards(t *testing.T) {
	for _, tc := range []struct {
		demand, shards string
		want           string
	}{
		{"normal", "", "1"},
		{"hot", "", "4"},
		{"very_hot", "", "8"},
		{"", "", "left out"},
		{"hot", "2", "2"},
		{"very_hot", " 5 ", "5"},
	} {
		in, errs := goodsFormInput(views.GoodsForm{Price: "1", SeckillPrice: "1", Stock: "9", Demand: tc.demand, Shards: tc.shards}, 1)
		if len(errs) != 0 || optional(in.Shards) != tc.want {
			t.Errorf("demand %q, shards %q: shards %s %v, want %s", tc.demand, tc.shards, optional(in.Shards), errs, tc.want)
		}
	}
	if _, errs := goodsFormInput(views.GoodsForm{Price: "1", SeckillPrice: "1", Stock: "9", Demand: "lukewarm"}, 1); errs["demand"] == "" {
		t.Errorf("demand \"lukewarm\": no field error (%v)", errs)
	}
}

// optional shows a field that may be left out.
func optional(p *int) string {
	if p == nil {
		return "left out"
	}
	return strconv.Itoa(*p)
}
