package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Redis restored from an old snapshot sells the last unit of stock 3 a
// second time; its buyer pays before the flush. After the flush the buyer's
// socket gets the order failed with refund_due, the API shows it so and
// refuses to pay it again, three orders hold the three units, and the
// reconciliation shows only the refusal.
func TestGoodsPaidDuplicateFails(t *testing.T) {
	t.Parallel()
	a := startApp(t, func(c *Config) { c.FlushInterval = time.Minute }) // the test flushes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	flush := func() {
		t.Helper()
		if err := a.FlushAll(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	mt, g := a.liveGoods(3, 1)
	fresh := fmt.Sprintf("{goods:%d}:fresh", g.ID)
	var firsts []orderJSON
	var tokens []string
	var snapshot string
	for i := 0; i < 3; i++ {
		if i == 2 {
			var err error
			if snapshot, err = a.Goods.Redis.Get(ctx, fresh).Result(); err != nil {
				t.Fatal(err)
			}
		}
		tok, _ := a.newUser()
		tokens = append(tokens, tok)
		firsts = append(firsts, a.grab(tok, g.ID))
	}
	flush()
	if err := a.Goods.Redis.Set(ctx, fresh, snapshot, 0).Err(); err != nil { // the restore
		t.Fatal(err)
	}
	ut, uid := a.newUser()
	ws := a.dialWS(ut)
	dup := a.grab(ut, g.ID)
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", dup.ID), ut, nil, nil); st != 200 {
		t.Fatalf("pay the duplicate: %d", st)
	}
	flush()

	ws.next(t, 5*time.Second, "the duplicate failed, refund due", func(ev map[string]any) bool {
		od, _ := ev["order"].(map[string]any)
		return ev["type"] == "order" && od != nil && num(od["id"]) == dup.ID && num(od["user_id"]) == uid &&
			od["status"] == "failed" && od["failure"] == "refund_due"
	})
	if got := a.order(ut, dup.ID); got.Status != "failed" || got.Failure != "refund_due" {
		t.Fatalf("the duplicate reads %+v, want failed, refund_due", got)
	}
	var mine struct{ Orders []orderJSON }
	if st := a.call("GET", "/api/me/orders", ut, nil, &mine); st != 200 || len(mine.Orders) != 1 || mine.Orders[0].Failure != "refund_due" {
		t.Fatalf("my orders: %d %+v", st, mine.Orders)
	}
	if st, page := a.getPage(ut, "/me/orders"); st != 200 || !strings.Contains(page, "Failed: sold twice, refund due") {
		t.Fatalf("My orders page (%d) does not say the refund is due", st)
	}
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", dup.ID), ut, nil, 409, "expired")

	if err := a.Goods.SyncStock(ctx, 0); err != nil {
		t.Fatal(err)
	}
	st := a.stats(mt, g.ID)
	if st.Remaining != 0 || st.Unpaid+st.Paid != 3 || st.Failed != 1 || st.DB.Unpaid+st.DB.Paid != 3 || st.DB.Failed != 1 || st.DB.Conflicts != 1 {
		t.Fatalf("stats %+v: want 3 orders holding the 3 units on both sides and the duplicate failed", st)
	}
	if !slices.Equal(st.Drift, []string{"conflicts"}) {
		t.Fatalf("drift %v, want only the refusal", st.Drift)
	}
	for i, o := range firsts { // the orders that came first keep their units
		if got := a.order(tokens[i], o.ID); got.Status != "unpaid" {
			t.Fatalf("first order %d reads %+v", i+1, got)
		}
	}
}
