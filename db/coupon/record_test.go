package coupon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
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
	got, again, ok := coupon.GrabRecordFields(rec)
	if !ok {
		t.Fatalf("Go cannot read the record %q the script wrote", rec)
	}
	luaNames, luaGot, luaAgain, err := cs.LuaGrabFields(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	dbtest.CheckRecord(t, "grab", rec, coupon.GrabFieldNames(), want,
		dbtest.RecordRead{Fields: got, Again: again}, dbtest.RecordRead{Names: luaNames, Fields: luaGot, Again: luaAgain})
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
	for _, name := range coupon.GrabFieldNames() {
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
