package goods_test

import (
	"fmt"
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// A sample round trip, every field: the real sample script writes it, the
// Go codec and the Lua prelude read each field back by name and write it
// again byte for byte.
func TestSampleRecordRoundTrip(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.LiveGoods(9, 1)
	var first *model.Order
	for u := int64(1); u <= 4; u++ {
		o := e.Grab(u, g.ID)
		if first == nil {
			first = o
		}
	}
	if _, err := e.S.PayOrder(e.Ctx, 1, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.S.SampleActive(e.Ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := e.S.Redis.LRange(e.Ctx, sale.Key(g.ID, "samples"), -1, -1).Result()
	if err != nil || len(recs) != 1 {
		t.Fatalf("the sample: %q, %v", recs, err)
	}
	rec := recs[0]
	want := map[string]string{"at": fmt.Sprint(e.Clk.Now().UnixMilli()), "remaining": "5", "unpaid": "3", "paid": "1", "grabs": "4"}
	got, again, err := goods.SampleRecordFields(rec)
	if err != nil {
		t.Fatalf("Go reads the sample %q: %v", rec, err)
	}
	luaNames, luaGot, luaAgain, err := e.S.LuaSampleFields(e.Ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	dbtest.CheckRecord(t, "sample", rec, goods.SampleFieldNames(), want,
		dbtest.RecordRead{Fields: got, Again: again}, dbtest.RecordRead{Names: luaNames, Fields: luaGot, Again: luaAgain})
}
