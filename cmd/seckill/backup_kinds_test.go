package main

import (
	"maps"
	"testing"
)

// The restore drill for red packets and coupons: claims and coupons made
// after the backup (one of them spent on an order paid after it) are not in
// the restored store; `seckill resend-orders` brings each back from Redis as
// it was, reports no drift of either kind, and a second run changes nothing.
func TestBackupRestoreDrillRedPacketsAndCoupons(t *testing.T) {
	ctx := t.Context()
	redisURL := drillRedis(t)
	a := startApp(t, func(c *Config) { c.RedisURL = redisURL })
	mt, g := a.liveGoods(10, 5)
	p := a.createRedPacket(mt, map[string]any{"title": "Drill", "total_cents": 600, "count": 6, "mode": "fixed", "expires_in": "1h"})
	tpl := a.couponTemplate(mt, "amount_off", 100, 0, 7)
	u := make([]string, 4)
	for i := range u {
		u[i], _ = a.newUser()
	}

	// Before the backup: one claim, one coupon, flushed.
	a.grabRedPacket(u[0], p.ID)
	a.grabCoupon(u[0], tpl.ID)
	if err := a.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	file, _ := backupStore(t, a)

	// After it: claims, coupons (two for one shopper) and a coupon spent on a paid order.
	for _, tok := range u[1:] {
		a.grabRedPacket(tok, p.ID)
	}
	a.grabCoupon(u[1], tpl.ID)
	a.grabCoupon(u[1], tpl.ID)
	spent := a.grabCoupon(u[2], tpl.ID)
	o := a.grab(u[2], g.ID)
	if st, paid := a.pay(u[2], o.ID, spent.ID); st != 200 || paid.Status != "paid" {
		t.Fatalf("pay order %d with coupon %d: %d %s", o.ID, spent.ID, st, paid.Status)
	}
	if err := a.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	claims := func(app *testApp) map[int64]int64 { // share → user
		return pairs(t, app.SQL, `SELECT seq, user_id FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, p.ID)
	}
	coupons := func(app *testApp) map[int64]int64 { // coupon → user
		return pairs(t, app.SQL, `SELECT id, user_id FROM user_coupons WHERE coupon_id = ?`, tpl.ID)
	}
	used := func(app *testApp) map[int64]int64 { // coupon → order
		return pairs(t, app.SQL, `SELECT id, order_id FROM user_coupons WHERE coupon_id = ? AND status = 'used'`, tpl.ID)
	}
	wantClaims, wantCoupons := claims(a), coupons(a)
	if len(wantClaims) != 4 || len(wantCoupons) != 4 {
		t.Fatalf("before the restore the store holds %d claims and %d coupons, want 4 of each", len(wantClaims), len(wantCoupons))
	}

	b := restoreStore(t, a, file, redisURL)
	if n, m := len(claims(b)), len(coupons(b)); n != 1 || m != 1 {
		t.Fatalf("the restored store holds %d claims and %d coupons: want the backup's 1 of each", n, m)
	}
	// A second run finds the store whole and changes nothing.
	for run := 1; run <= 2; run++ {
		r, err := resendOrders(ctx, b.Main)
		if err != nil {
			t.Fatalf("resend, run %d: %v", run, err)
		}
		t.Logf("run %d:\n%s", run, r)
		if r.claims != 4 || r.grabs != 4 {
			t.Errorf("run %d queued %d claims and %d grabs, want the 4 of each Redis holds", run, r.claims, r.grabs)
		}
		if len(r.claimsMissing) != 0 || len(r.grabsMissing) != 0 {
			t.Errorf("run %d: drift of red packets %v, of coupons %v; want none", run, r.claimsMissing, r.grabsMissing)
		}
		if want := map[int]int64{1: 1, 2: 0}[run]; r.uses != want {
			t.Errorf("run %d marked %d coupons used, want %d", run, r.uses, want)
		}
		if got := claims(b); !maps.Equal(got, wantClaims) {
			t.Errorf("run %d: the store's claims %v, want %v as before the restore", run, got, wantClaims)
		}
		if got := coupons(b); !maps.Equal(got, wantCoupons) {
			t.Errorf("run %d: the store's coupons %v, want %v as before the restore", run, got, wantCoupons)
		}
		if got := used(b); !maps.Equal(got, map[int64]int64{spent.ID: o.ID}) {
			t.Errorf("run %d: used coupons %v, want coupon %d used for order %d", run, got, spent.ID, o.ID)
		}
		var claimed, conflicts int64
		b.SQL.R.QueryRowContext(ctx, `SELECT claimed_count FROM redpackets WHERE id = ?`, p.ID).Scan(&claimed)
		b.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM coupon_conflicts WHERE coupon_id = ?`, tpl.ID).Scan(&conflicts)
		if claimed != 4 || conflicts != 0 {
			t.Errorf("run %d: the packet counts %d claims (want 4), the template %d refused grabs (want 0)", run, claimed, conflicts)
		}
	}
}
