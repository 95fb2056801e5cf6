package handlers

import (
	"encoding/json"
	"testing"

	"github.com/seckill/seckill/views"
)

// The shards field reaches the service from the JSON body and from the
// admin form; left out it is 0 (1 on create, unchanged on update), and a
// form value that is no whole number is a field error.
func TestGoodsShardsInput(t *testing.T) {
	for body, want := range map[string]int{`, "shards": 3`: 3, ``: 0} {
		var b goodsBody
		if err := json.Unmarshal([]byte(`{"price_cents": 1, "seckill_price_cents": 1`+body+`}`), &b); err != nil {
			t.Fatal(err)
		}
		in, err := b.input()
		if err != nil || in.Shards != want {
			t.Fatalf("%s: shards %d (%v), want %d", body, in.Shards, err, want)
		}
	}
	for form, want := range map[string]int{"3": 3, "": 0, " 2 ": 2} {
		in, errs := goodsFormInput(views.GoodsForm{Price: "1", SeckillPrice: "1", Stock: "9", Shards: form}, 1)
		if len(errs) != 0 || in.Shards != want {
			t.Fatalf("form %q: shards %d %v, want %d", form, in.Shards, errs, want)
		}
	}
	if _, errs := goodsFormInput(views.GoodsForm{Price: "1", SeckillPrice: "1", Stock: "9", Shards: "three"}, 1); errs["shards"] == "" {
		t.Fatalf("shards \"three\": no field error (%v)", errs)
	}
}
