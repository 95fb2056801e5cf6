package coupon_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/db/coupon"
)

// A grab record round trip, every field: the real grab script writes the
// record on the flush queue, the Go codec and the Lua prelude read each
// field back by name, both write it back byte for byte, and the flush
// stores it. A field added to record.go's table but not written by the
// script (or not listed here), or one the script writes past the table,
// fails it.
func TestGrabRecordRoundTrip(t *testing.T) {
	cs := newService(t)
	ctx := context.Background()
	now := time.Now()
	c := cs.create(t, 9, 1, now.Add(-time.Minute), now.Add(time.Hour))
	users := cs.users(t, "rec", 5)
	for _, u := range users[:4] { // the unit (5) differs from the user
		cs.grabOK(t, u, c.ID)
	}
	uc := cs.grabOK(t, users[4], c.ID)
	recs, err := cs.Redis.LRange(ctx, coupon.GrabQueue(c.ID).Pending, -1, -1).Result()
	if err != nil || len(recs) != 1 {
		t.Fatalf("the queued grab: %q, %v", recs, err)
	}
	rec := recs[0]
	want := map[string]string{"unit": "5", "user": fmt.Sprint(users[4]), "grabbed": fmt.Sprint(uc.GrabbedAt.UnixMilli())}
	names := coupon.GrabFieldNames()
	for _, name := range names {
		if _, ok := want[name]; !ok {
			t.Errorf("field %q of record.go has no value in this test: add one the script writes", name)
		}
	}
	for name := range want {
		if !slices.Contains(names, name) {
			t.Errorf("field %q is not in record.go's table", name)
		}
	}
	got, again, ok := coupon.GrabRecordFields(rec)
	if !ok {
		t.Fatalf("Go cannot read the record %q the script wrote", rec)
	}
	for _, name := range names {
		if got[name] != want[name] {
			t.Errorf("field %s: Go read %q, want %q (record %q)", name, got[name], want[name], rec)
		}
	}
	if again != rec {
		t.Errorf("Go writes the record back as %q, the script wrote %q", again, rec)
	}
	luaNames, luaGot, luaAgain, err := cs.LuaGrabFields(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(luaNames, names) {
		t.Errorf("Lua's fields %v, Go's %v", luaNames, names)
	}
	for _, name := range names {
		if luaGot[name] != want[name] {
			t.Errorf("field %s: Lua read %q, want %q", name, luaGot[name], want[name])
		}
	}
	if luaAgain != rec {
		t.Errorf("Lua joins the record again as %q, want %q", luaAgain, rec)
	}
	if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil {
		t.Fatal(err)
	}
	var id, user, grabbed int64
	if err := cs.SQL.R.QueryRowContext(ctx, `SELECT id, user_id, grabbed_ms FROM user_coupons WHERE coupon_id = ? AND user_id = ?`,
		c.ID, users[4]).Scan(&id, &user, &grabbed); err != nil {
		t.Fatalf("the flushed coupon: %v", err)
	}
	unit := id - coupon.UserCouponID(c.ID, 0) // the store keeps the unit in the ID
	fromStore := map[string]string{"unit": fmt.Sprint(unit), "user": fmt.Sprint(user), "grabbed": fmt.Sprint(grabbed)}
	for _, name := range names {
		if fromStore[name] != want[name] {
			t.Errorf("field %s: the store has %q, want %q", name, fromStore[name], want[name])
		}
	}
	for _, bad := range []string{"5:7", "5:7:1764550000000:1"} {
		if _, _, ok := coupon.GrabRecordFields(bad); ok {
			t.Errorf("Go read %q, which no grab record is", bad)
		}
		if _, _, _, err := cs.LuaGrabFields(ctx, bad); err == nil {
			t.Errorf("Lua joined %q again", bad)
		}
	}
}
