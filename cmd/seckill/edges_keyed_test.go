package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
)

// A keyed retry answered from its remembered answer never sends the live
// stock back to a figure older than one announced since: after the goods'
// catalog reloaded (its title edited), the retry of a grab and of a cancel
// made before later grabs leaves the stock read at once as it is.
func TestKeyedRetryAnnouncesNoOlderStock(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(6, 3)
	shopper, _ := a.newUser()
	grabURL := fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID)
	h := bearer(shopper)
	edit := 0
	reload := func() {
		t.Helper()
		edit++
		if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, map[string]any{"slot_id": g.SlotID, "title": fmt.Sprintf("Edited %d", edit),
			"price_cents": g.PriceCents, "seckill_price_cents": g.SeckillPriceCents, "stock": g.Stock, "limit_per_user": g.LimitPerUser}, nil); st != 200 {
			t.Fatalf("edit the title: %d", st)
		}
	}
	wantLeft := func(what string, left int64) {
		t.Helper()
		if got := a.goods(g.ID); got.Remaining != left {
			t.Fatalf("%s: the goods reads remaining %d, want %d", what, got.Remaining, left)
		}
	}

	h["Idempotency-Key"] = "grab-then-lost"
	first := send(t, "POST", grabURL, h, nil) // 5 left
	if first.status != 201 {
		t.Fatalf("keyed grab: %d %s", first.status, first.body)
	}
	a.grab(shopper, g.ID) // 4 left
	reload()
	wantLeft("after the edit", 4)
	again := send(t, "POST", grabURL, h, nil)
	if again.status != 201 || !bytes.Equal(orderIDOf(t, again.body), orderIDOf(t, first.body)) {
		t.Fatalf("retry of the keyed grab: %d %s, want 201 and %s", again.status, again.body, first.body)
	}
	wantLeft("after the grab's retry", 4)

	var o struct{ Order orderJSON }
	if err := json.Unmarshal(first.body, &o); err != nil {
		t.Fatal(err)
	}
	cancelURL := fmt.Sprintf("%s/api/orders/%d/cancel", a.URL, o.Order.ID)
	h["Idempotency-Key"] = "cancel-then-lost"
	if r := send(t, "POST", cancelURL, h, nil); r.status != 200 { // 5 left
		t.Fatalf("keyed cancel: %d %s", r.status, r.body)
	}
	a.grab(shopper, g.ID) // 4 left
	reload()
	wantLeft("after the second edit", 4)
	if r := send(t, "POST", cancelURL, h, nil); r.status != 200 {
		t.Fatalf("retry of the keyed cancel: %d %s", r.status, r.body)
	}
	wantLeft("after the cancel's retry", 4)
}

// While the sale is paused a grab retried with the Idempotency-Key of a
// grab answered before gets that answer again (goods, red packets,
// coupons): the shopper who lost the answer learns of what they hold. A new
// grab, keyed or not, is refused 503 unavailable, and changes nothing.
func TestKeyedRetryWhileThePauseHolds(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	mt, g := a.liveGoods(5, 2)
	rp := a.createRedPacket(mt, map[string]any{"title": "Paused packet", "total_cents": 500, "count": 5, "mode": "fixed"})
	now := a.Clock.Now()
	cp := a.couponCreate(mt, "Paused coupon", 5, 2, now.Add(-time.Minute), now.Add(time.Hour))
	shopper, _ := a.newUser()
	grabs := []struct{ what, url string }{
		{"goods", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID)},
		{"red packet", fmt.Sprintf("%s/api/redpackets/%d/grab", a.URL, rp.ID)},
		{"coupon", fmt.Sprintf("%s/api/coupons/%d/grab", a.URL, cp.ID)},
	}
	firsts := make([]answer, len(grabs))
	for i, gr := range grabs {
		h := bearer(shopper)
		h["Idempotency-Key"] = "before-the-pause-" + gr.what
		if firsts[i] = send(t, "POST", gr.url, h, nil); firsts[i].status != 201 {
			t.Fatalf("%s: keyed grab: %d %s", gr.what, firsts[i].status, firsts[i].body)
		}
	}
	a.setSwitches(admin, map[string]any{"sale_paused": true})
	defer a.setSwitches(admin, map[string]any{"sale_paused": false})
	for i, gr := range grabs {
		h := bearer(shopper)
		h["Idempotency-Key"] = "before-the-pause-" + gr.what
		if r := send(t, "POST", gr.url, h, nil); r.status != 201 || !bytes.Equal(r.body, firsts[i].body) {
			t.Fatalf("%s: the keyed retry while paused answered %d %s, want the first answer 201 %s", gr.what, r.status, r.body, firsts[i].body)
		}
		h["Idempotency-Key"] = "during-the-pause-" + gr.what
		if r := send(t, "POST", gr.url, h, nil); r.status != 503 || r.code() != "unavailable" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s: a new keyed grab while paused answered %d %s, want 503 unavailable with Retry-After", gr.what, r.status, r.body)
		}
		if r := send(t, "POST", gr.url, bearer(shopper), nil); r.status != 503 || r.code() != "unavailable" {
			t.Fatalf("%s: a grab without a key while paused answered %d %s, want 503 unavailable", gr.what, r.status, r.body)
		}
	}
	if got := a.goods(g.ID).Remaining; got != 4 {
		t.Fatalf("the goods reads remaining %d after the pause's refusals, want 4", got)
	}
}

// A keyed request whose proof of work was spent by an undecided first try
// (503: the replica wait ran out while the proof was spent durably) is
// decided afresh when retried with the same key and proof, never refused
// for its own attempt: a grab wins 201, a waiting-room join gets its ticket.
// The spent proof under another key is still pow_invalid.
func TestKeyedRetryAfterAnUndecided503(t *testing.T) {
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	a := startApp(t, func(c *Config) { c.RedisURL, c.RedisWaitTimeout = "redis://"+master.Addr, 2*time.Second })
	fair := a.fairGoods(4, false, -time.Minute)
	_, queued := a.queueGoods(10, 5, time.Hour, map[string]any{"pow_bits": 4})
	shopper, _ := a.newUser()
	for _, w := range []struct{ what, url, key string }{
		{"grab", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, fair.ID), "grab-undecided"},
		{"join", fmt.Sprintf("%s/api/goods/%d/queue", a.URL, queued.ID), "join-undecided"},
	} {
		g := fair
		if w.what == "join" {
			g = queued
		}
		h := bearer(shopper)
		if r := send(t, "POST", w.url, h, nil); r.status != 403 || r.code() != "pow_required" {
			t.Fatalf("a %s without a proof: %d %s, want 403 pow_required", w.what, r.status, r.body)
		}
		h["X-Pow"], h["Idempotency-Key"] = solve(t, a.powChallenge(shopper, g.ID)), w.key
		replica.Signal(syscall.SIGSTOP)
		r := send(t, "POST", w.url, h, nil)
		replica.Signal(syscall.SIGCONT)
		if r.status != 503 || r.code() != "unavailable" {
			t.Fatalf("%s while the replica lags: %d %s, want 503 unavailable", w.what, r.status, r.body)
		}
		eventually(t, time.Minute, "the retry of the "+w.what+" to be decided", func() bool {
			r = send(t, "POST", w.url, h, nil)
			return r.status != 503
		})
		if r.status != 201 {
			t.Fatalf("the %s retried with its key and proof: %d %s, want 201", w.what, r.status, r.body)
		}
		h["Idempotency-Key"] = w.key + "-another"
		if r := send(t, "POST", w.url, h, nil); w.what == "grab" && (r.status != 403 || r.code() != "pow_invalid") {
			t.Fatalf("a new key with the spent proof: %d %s, want 403 pow_invalid", r.status, r.body)
		}
	}
}

// A merchant's keyed desk refund retried while merchants are read-only
// answers as it first did (a refusal as well as a refund); a new keyed
// refund, or one without a key, meets the read-only refusal, and nothing
// changes.
func TestKeyedDeskRefundWhileReadOnly(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	mt, g := a.liveGoods(5, 2)
	shopper, _ := a.newUser()
	paid, unpaid := a.grab(shopper, g.ID), a.grab(shopper, g.ID)
	if st, _ := a.pay(shopper, paid.ID, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	eventually(t, 2*time.Minute, "the desk to list both orders, one paid", func() bool {
		return len(a.desk(mt, nil).Orders) == 2 && len(a.desk(mt, url.Values{"status": {"paid"}}).Orders) == 1
	})
	refund := func(id int64, key string) answer {
		h := bearer(mt)
		if key != "" {
			h["Idempotency-Key"] = key
		}
		return send(t, "POST", fmt.Sprintf("%s/api/admin/orders/%d/refund", a.URL, id), h, map[string]string{"reason": "damaged"})
	}
	refused, refunded := refund(unpaid.ID, "refund-unpaid"), refund(paid.ID, "refund-paid")
	if refused.status != 409 || refunded.status != 200 {
		t.Fatalf("before the pause: unpaid %d %s, paid %d %s; want 409 and 200", refused.status, refused.body, refunded.status, refunded.body)
	}
	a.setSwitches(admin, map[string]any{"merchant_read_only": true})
	defer a.setSwitches(admin, map[string]any{"merchant_read_only": false})
	for _, c := range []struct {
		id    int64
		key   string
		first answer
	}{{unpaid.ID, "refund-unpaid", refused}, {paid.ID, "refund-paid", refunded}} {
		if r := refund(c.id, c.key); r.status != c.first.status || !bytes.Equal(r.body, c.first.body) {
			t.Fatalf("%s retried while read-only: %d %s, want the first answer %d %s", c.key, r.status, r.body, c.first.status, c.first.body)
		}
	}
	for _, key := range []string{"during-the-pause", ""} {
		if r := refund(unpaid.ID, key); r.status != 403 || r.code() != "forbidden" {
			t.Fatalf("a refund keyed %q while read-only: %d %s, want 403 forbidden", key, r.status, r.body)
		}
	}
	if got := a.order(shopper, unpaid.ID).Status; got != "unpaid" {
		t.Fatalf("the unpaid order is %s after the read-only refusals", got)
	}
}
