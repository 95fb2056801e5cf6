package sale_test

import (
	"strings"
	"testing"

	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/sale"
)

// Records Go writes (a bucket rebuilt from the store) are records the
// scripts read and write back unchanged; and a record whose length no
// field ends at is refused by both sides.
func TestOrderRecordGoWritesLuaReads(t *testing.T) {
	e := goodstest.New(t)
	for _, rec := range []string{
		"4|4242|6|4999|unpaid|1764550000000|1764550900000|1|1764550000000",
		"4|4242|6|4999|failed|1764550000000|1764550900000|2|1764550001000|sold_twice",
		"4|4242|6|4999|paid|1764550000000|1764550900000|2|1764550001000||1234|77|1764550001000",
	} {
		got, again, err := goodstest.OrderRecordFields(rec)
		if err != nil || again != rec {
			t.Errorf("Go reads %q as %v and writes %q (%v)", rec, got, again, err)
			continue
		}
		_, luaGot, luaAgain, err := sale.OrderFields.Echo(e.Ctx, e.S.Redis, again)
		if err != nil || luaAgain != rec {
			t.Errorf("Lua writes %q back as %q (%v)", rec, luaAgain, err)
			continue
		}
		for name, v := range got {
			if luaGot[name] != v && !(luaGot[name] == "<none>" && (v == "" || v == "0")) {
				t.Errorf("record %q field %s: Lua read %q, Go %q", rec, name, luaGot[name], v)
			}
		}
	}
	for _, bad := range []string{"4|4242|6|4999|unpaid|1764550000000|1764550900000|1", "4|4242|6|4999|paid|1|2|3|4||5|6"} {
		if _, _, err := goodstest.OrderRecordFields(bad); err == nil {
			t.Errorf("Go read %q, which no record is", bad)
		}
		if _, _, _, err := sale.OrderFields.Echo(e.Ctx, e.S.Redis, bad); err == nil || !strings.Contains(err.Error(), "may not end there") {
			t.Errorf("Lua joined %q again: %v", bad, err)
		}
	}
}
