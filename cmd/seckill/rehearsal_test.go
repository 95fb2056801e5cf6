package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/tasks"
)

// createRehearsal has the caller create a rehearsal slot starting at start (from now) and lasting length.
func (a *testApp) createRehearsal(token string, start, length time.Duration) slotJSON {
	a.T.Helper()
	now := a.Clock.Now().UTC()
	var out struct {
		Slot struct {
			slotJSON
			Rehearsal bool `json:"rehearsal"`
		}
	}
	body := map[string]any{"title": "Rehearsal " + fmt.Sprint(userSeq.Add(1)), "rehearsal": true,
		"start_at": now.Add(start).Format(time.RFC3339Nano), "end_at": now.Add(start + length).Format(time.RFC3339Nano)}
	if st := a.call("POST", "/api/admin/slots", token, body, &out); st != 201 || !out.Slot.Rehearsal {
		a.T.Fatalf("create rehearsal slot: %d %+v", st, out.Slot)
	}
	return out.Slot.slotJSON
}

// ordersCSVRows answers the data rows (the header left out) of a goods' orders export.
func (a *testApp) ordersCSVRows(token string, goodsID int64) int {
	a.T.Helper()
	st, body := a.getPage(token, fmt.Sprintf("/api/admin/goods/%d/orders.csv?format=machine", goodsID))
	if st != 200 {
		a.T.Fatalf("orders.csv of goods %d: %d", goodsID, st)
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	if !strings.Contains(lines[0], "order_id") {
		a.T.Fatalf("orders.csv of goods %d has no header: %q", goodsID, body)
	}
	return len(lines) - 1
}

// goodsKeys counts the Redis keys under the goods' first hash tag, and tells whether it is active.
func (a *testApp) goodsKeys(goodsID int64) (keys int, active bool) {
	a.T.Helper()
	ctx := context.Background()
	ks, err := rdb.Keys(ctx, a.Redis.Client, goods.HashTag(goodsID)+"*")
	keys = len(ks)
	if err != nil {
		a.T.Fatal(err)
	}
	active, err = a.Redis.Client.SIsMember(ctx, goods.ActiveKey, goodsID).Result()
	if err != nil {
		a.T.Fatal(err)
	}
	return keys, active
}

// storeRows counts the store's rows of the goods: itself, its orders, its reminders.
func (a *testApp) storeRows(goodsID int64) (n int) {
	a.T.Helper()
	for _, q := range []string{`SELECT COUNT(*) FROM goods WHERE id = ?`, `SELECT COUNT(*) FROM orders WHERE goods_id = ?`,
		`SELECT COUNT(*) FROM goods_reminders WHERE goods_id = ?`, `SELECT COUNT(*) FROM goods_reminder_deliveries WHERE goods_id = ?`} {
		var k int
		if err := a.SQL.R.QueryRow(q, goodsID).Scan(&k); err != nil {
			a.T.Fatal(err)
		}
		n += k
	}
	return n
}

// A rehearsal runs the whole sale (reminders, grabs, payment, the flush)
// beside a real one made alike, yet its orders count nowhere: not in the
// dashboard's revenue, the orders desk, the export or the inbox, while the
// real slot's do in each; its pages say "Rehearsal". DELETE of the real
// slot is refused with nothing removed; DELETE of the rehearsal removes its
// slot, goods, orders and Redis keys, and is audited.
func TestRehearsalCountsNowhereAndIsDeleted(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	merchant, _ := a.newMerchant()
	shopper, _ := a.newUser()
	realSlot := a.createSlot(merchant, 40*time.Minute, time.Hour)
	rehSlot := a.createRehearsal(merchant, 40*time.Minute, time.Hour)
	realG, rehG := a.goodsPriced(merchant, realSlot.ID, 1990, 3), a.goodsPriced(merchant, rehSlot.ID, 1990, 3)
	var g struct {
		Goods struct {
			Rehearsal bool `json:"rehearsal"`
		}
	}
	if a.call("GET", fmt.Sprintf("/api/goods/%d", rehG.ID), "", nil, &g); !g.Goods.Rehearsal {
		t.Fatalf("rehearsal goods answers rehearsal false")
	}

	// Reminders: the task runs for both, only the real one reaches the inbox.
	start := realSlot.StartAt
	for _, id := range []int64{realG.ID, rehG.ID} {
		a.goodsRemind("PUT", shopper, id, 10, "app")
	}
	a.advance(start.Add(-10 * time.Minute).Sub(a.Clock.Now())) // the two start within the same second
	h := &tasks.GoodsReminders{Store: a.Goods}
	for id, start := range map[int64]time.Time{realG.ID: realSlot.StartAt, rehG.ID: rehSlot.StartAt} {
		task := tasks.NewGoodsRemindTask(tasks.GoodsRemindPayload{GoodsID: id, StartAt: start, MinutesBefore: 10})
		if err := h.Remind(context.Background(), asynq.NewTask(task.Type(), task.Payload())); err != nil {
			t.Fatal(err)
		}
	}
	var inbox struct {
		Notifications []struct {
			GoodsID int64 `json:"goods_id"`
		}
	}
	var sent int
	a.SQL.R.QueryRow(`SELECT COUNT(*) FROM goods_reminder_deliveries WHERE goods_id = ?`, rehG.ID).Scan(&sent)
	if sent != 1 {
		t.Fatalf("the rehearsal's reminder ran %d times, want 1", sent)
	}
	a.call("GET", "/api/me/notifications", shopper, nil, &inbox)
	if len(inbox.Notifications) != 1 || inbox.Notifications[0].GoodsID != realG.ID {
		t.Fatalf("inbox = %+v, want the real goods' reminder alone", inbox.Notifications)
	}

	// The sale: an order of each, paid, flushed to the store.
	a.advance(start.Add(time.Minute).Sub(a.Clock.Now()))
	realO, rehO := a.grab(shopper, realG.ID), a.grab(shopper, rehG.ID)
	for _, o := range []orderJSON{realO, rehO} {
		if st, _ := a.pay(shopper, o.ID, 0); st != 200 {
			t.Fatalf("pay order %d: %d", o.ID, st)
		}
	}
	eventually(t, 10*time.Second, "both orders in the store", func() bool {
		var n int
		a.SQL.R.QueryRow(`SELECT COUNT(*) FROM orders WHERE id IN (?, ?) AND status = 'paid'`, realO.ID, rehO.ID).Scan(&n)
		return n == 2
	})

	// Revenue: the dashboard sums the real slot only.
	if st, page := a.getPage(merchant, "/admin/"); st != 200 || !strings.Contains(page, fmt.Sprintf(`data-dashboard-slot="%d"`, realSlot.ID)) ||
		strings.Contains(page, fmt.Sprintf(`data-dashboard-slot="%d"`, rehSlot.ID)) {
		t.Fatalf("dashboard %d: want the real slot %d and not the rehearsal %d", st, realSlot.ID, rehSlot.ID)
	}
	// The desk: the real order, never the rehearsal's, listed or by number.
	for _, tok := range []string{merchant, admin} {
		got := a.desk(tok, url.Values{})
		var ids []int64
		for _, o := range got.Orders {
			ids = append(ids, o.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint([]int64{realO.ID}) {
			t.Fatalf("desk lists %v, want [%d]", ids, realO.ID)
		}
		if n := len(a.desk(tok, url.Values{"slot_id": {fmt.Sprint(rehSlot.ID)}}).Orders); n != 0 {
			t.Fatalf("desk of the rehearsal slot lists %d orders", n)
		}
	}
	a.wantError("GET", fmt.Sprintf("/api/admin/orders/%d", rehO.ID), admin, nil, 404, "not_found")
	// The export: the real order's row, the rehearsal's header alone.
	if real, reh := a.ordersCSVRows(merchant, realG.ID), a.ordersCSVRows(merchant, rehG.ID); real != 1 || reh != 0 {
		t.Fatalf("orders.csv rows: real %d, rehearsal %d; want 1 and 0", real, reh)
	}
	// The pages say which is which.
	for id, want := range map[int64]bool{realG.ID: false, rehG.ID: true} {
		if _, page := a.getPage("", fmt.Sprintf("/goods/%d", id)); strings.Contains(page, `data-testid="rehearsal-badge"`) != want {
			t.Fatalf("goods page %d: rehearsal badge shown %v, want %v", id, !want, want)
		}
	}
	if _, page := a.getPage("", fmt.Sprintf("/slots/%d", rehSlot.ID)); !strings.Contains(page, `data-testid="rehearsal-badge"`) {
		t.Fatalf("the rehearsal slot's page does not say Rehearsal")
	}

	// DELETE: a real slot is refused and loses nothing; another merchant finds no such slot (its maker may, as an admin may).
	realKeys, _ := a.goodsKeys(realG.ID)
	realRows := a.storeRows(realG.ID)
	a.wantError("DELETE", fmt.Sprintf("/api/admin/slots/%d", realSlot.ID), admin, nil, 409, "conflict")
	other, _ := a.newMerchant()
	a.wantError("DELETE", fmt.Sprintf("/api/admin/slots/%d", rehSlot.ID), other, nil, 404, "not_found")
	a.wantError("DELETE", fmt.Sprintf("/api/admin/slots/%d", rehSlot.ID), shopper, nil, 403, "forbidden")
	if k, _ := a.goodsKeys(realG.ID); k != realKeys || k == 0 || a.storeRows(realG.ID) != realRows {
		t.Fatalf("refused delete changed the real sale: keys %d→%d, rows %d→%d", realKeys, k, realRows, a.storeRows(realG.ID))
	}
	if a.order(shopper, realO.ID).Status != "paid" {
		t.Fatalf("the real order changed")
	}
	// The rehearsal goes with everything it made.
	if k, active := a.goodsKeys(rehG.ID); k == 0 || !active || a.storeRows(rehG.ID) < 3 {
		t.Fatalf("before the delete the rehearsal has %d keys (active %v), %d rows", k, active, a.storeRows(rehG.ID))
	}
	if st := a.call("DELETE", fmt.Sprintf("/api/admin/slots/%d", rehSlot.ID), admin, nil, nil); st != 204 {
		t.Fatalf("delete the rehearsal: %d", st)
	}
	if k, active := a.goodsKeys(rehG.ID); k != 0 || active {
		left, _ := rdb.Keys(context.Background(), a.Redis.Client, goods.HashTag(rehG.ID)+"*")
		t.Fatalf("after the delete the rehearsal has %d Redis keys %v (active %v)", k, left, active)
	}
	var slots int
	a.SQL.R.QueryRow(`SELECT COUNT(*) FROM slots WHERE id = ?`, rehSlot.ID).Scan(&slots)
	if n := a.storeRows(rehG.ID); n != 0 || slots != 0 {
		t.Fatalf("after the delete the store holds %d rows of the rehearsal's goods, %d of its slot", n, slots)
	}
	a.wantError("GET", fmt.Sprintf("/api/goods/%d", rehG.ID), "", nil, 404, "not_found")
	a.wantError("DELETE", fmt.Sprintf("/api/admin/slots/%d", rehSlot.ID), admin, nil, 404, "not_found")
	findAudit(t, a.auditLog(admin, ""), "slot.delete", fmt.Sprintf("slot:%d", rehSlot.ID))
	// The real sale is as it was.
	if k, _ := a.goodsKeys(realG.ID); k != realKeys || a.storeRows(realG.ID) != realRows || a.ordersCSVRows(merchant, realG.ID) != 1 {
		t.Fatalf("deleting the rehearsal touched the real sale")
	}
}

// `seckill bench -target URL -rehearsal` rehearses a sale on a running
// server through its public API: the load runs and its invariants hold, and
// afterwards nothing of it is left: no slot, goods or order in the store,
// no goods key in Redis, nothing on the desk or the dashboard.
func TestBenchRehearsalLeavesNothing(t *testing.T) {
	a := startApp(t)
	o, err := scenarios.ParseOptions([]string{"-target", a.URL, "-rehearsal", "-admin-password", testAdminPassword,
		"-users", "6", "-c", "4", "-n", "60", "-stock", "8", "-limit", "2"})
	if err != nil {
		t.Fatal(err)
	}
	o.Progress = nil
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Result(scenarios.RehearsalName)
	if res == nil || res.Requests != 60 || res.Codes["ok"] != 8 || res.Codes["transport"] > 0 {
		t.Fatalf("rehearsal load: %+v, want 60 requests and 8 orders", res)
	}
	if r.Failed() || len(r.Checks) < 4 {
		t.Fatalf("rehearsal checks: %+v", r.Checks)
	}
	for _, q := range []string{`SELECT COUNT(*) FROM slots`, `SELECT COUNT(*) FROM goods`, `SELECT COUNT(*) FROM orders`} {
		var n int
		if err := a.SQL.R.QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s = %d (%v) after the rehearsal, want 0", q, n, err)
		}
	}
	keys, err := rdb.Keys(context.Background(), a.Redis.Client, "{goods:*")
	if err != nil || len(keys) != 0 {
		t.Fatalf("%d goods keys left in Redis (%v)", len(keys), err)
	}
	admin := a.adminToken()
	if n := len(a.desk(admin, url.Values{}).Orders); n != 0 {
		t.Fatalf("the desk lists %d orders after the rehearsal", n)
	}
	if _, page := a.getPage(admin, "/admin/"); strings.Contains(page, "data-dashboard-slot=") {
		t.Fatalf("the dashboard shows a slot after the rehearsal")
	}
	findAudit(t, a.auditLog(admin, ""), "slot.delete", fmt.Sprintf("slot:%d", 1))
}
