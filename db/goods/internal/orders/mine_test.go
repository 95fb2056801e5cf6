package orders_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// mineLen is how many orders the user's list in Redis names for the goods.
func mineLen(e *goodstest.Env, goodsID, userID int64) int {
	e.T.Helper()
	k := max(e.Shards, 1)
	v, err := e.S.Redis.HGet(e.Ctx, sale.BucketKey(goodsID, sale.HomeBucket(userID, k), k, "mine"), strconv.FormatInt(userID, 10)).Result()
	if err != nil || v == "" {
		return 0
	}
	return len(strings.Split(v, ","))
}

// Grab and cancel (or let expire) 60 times: once flushed, the user's list
// in Redis names only the live orders (at most the limit), while My orders
// lists every order with its status at every step, flushed or not.
func TestMineListStaysBounded(t *testing.T) { goodstest.EachShards(t, testMineListStaysBounded) }

func testMineListStaysBounded(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	const limit, cycles, flushEvery = 2, 60, 7
	g := e.LiveGoods(5, limit)
	const user = 7
	want := map[int64]string{} // order → status My orders must show
	check := func(when string) {
		t.Helper()
		mine, err := e.S.MyOrders(e.Ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for _, o := range mine {
			got[o.ID] = o.Status
		}
		if len(mine) != len(want) || len(got) != len(want) {
			t.Fatalf("%s: My orders lists %d orders (%d distinct), want %d", when, len(mine), len(got), len(want))
		}
		for id, st := range want {
			if got[id] != st {
				t.Fatalf("%s: order %d shows %q, want %q", when, id, got[id], st)
			}
		}
	}
	held := e.Grab(user, g.ID) // one order kept live throughout
	want[held.ID] = model.OrderUnpaid
	for i := 1; i <= cycles; i++ {
		o := e.Grab(user, g.ID)
		want[o.ID] = model.OrderUnpaid
		if i%flushEvery == 3 {
			e.Flush() // flushed while unpaid: SQLite's row is stale once it ends
		}
		if i%5 == 0 {
			if err := e.S.ExpireAt(e.Ctx, o.ID, o.ExpiresAt); err != nil {
				t.Fatal(err)
			}
			want[o.ID] = model.OrderExpired
		} else {
			if _, err := e.S.CancelOrder(e.Ctx, user, o.ID); err != nil {
				t.Fatal(err)
			}
			want[o.ID] = model.OrderCancelled
		}
		if i%flushEvery == 0 {
			e.Flush()
			if n := mineLen(e, g.ID, user); n > limit {
				t.Fatalf("after cycle %d and a flush the list names %d orders, want at most the limit %d", i, n, limit)
			}
		}
		if i%11 == 0 {
			check("cycle " + strconv.Itoa(i))
		}
	}
	check("before the last flush")
	e.Flush()
	if n := mineLen(e, g.ID, user); n != 1 {
		t.Fatalf("after %d cycles the list names %d orders, want the 1 live one", cycles, n)
	}
	check("after the last flush")
	e.CheckBalance(g.ID, "after the cycles")
}
