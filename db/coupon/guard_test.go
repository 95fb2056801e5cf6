package coupon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// redisSnapshot is every Redis key of one template as it stood at one moment.
type redisSnapshot struct {
	strings map[string]string
	hashes  map[string]map[string]string
	lists   map[string][]string
	sets    map[string][]string
}

// templateKeys lists the keys that carry the template's hash tag.
func (cs *testService) templateKeys(t testing.TB, couponID int64) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), cs.redis.Client, fmt.Sprintf("{coupon:%d}*", couponID))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// snapshot copies every key of the template, as a backup of Redis would.
func (cs *testService) snapshot(t testing.TB, couponID int64) *redisSnapshot {
	t.Helper()
	ctx, rc := context.Background(), cs.redis.Client
	s := &redisSnapshot{strings: map[string]string{}, hashes: map[string]map[string]string{}, lists: map[string][]string{}, sets: map[string][]string{}}
	for _, k := range cs.templateKeys(t, couponID) {
		var err error
		switch rc.Type(ctx, k).Val() {
		case "string":
			s.strings[k], err = rc.Get(ctx, k).Result()
		case "hash":
			s.hashes[k], err = rc.HGetAll(ctx, k).Result()
		case "list":
			s.lists[k], err = rc.LRange(ctx, k, 0, -1).Result()
		case "set":
			s.sets[k], err = rc.SMembers(ctx, k).Result()
		default:
			t.Fatalf("snapshot: key %s of an unexpected type", k)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// restore puts the template's keys back as the snapshot had them, as
// restoring Redis from that backup would: later keys go, earlier ones return.
func (cs *testService) restore(t testing.TB, couponID int64, s *redisSnapshot) {
	t.Helper()
	ctx, rc := context.Background(), cs.redis.Client
	if keys := cs.templateKeys(t, couponID); len(keys) > 0 {
		if err := rc.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	pipe := rc.TxPipeline()
	for k, v := range s.strings {
		pipe.Set(ctx, k, v, 0)
	}
	for k, v := range s.hashes {
		pipe.HSet(ctx, k, v)
	}
	for k, v := range s.lists {
		pipe.RPush(ctx, k, v)
	}
	for k, v := range s.sets {
		pipe.SAdd(ctx, k, v)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// userEvents follows the users' live events and returns a function that
// reads everything published so far on their topics: it publishes a marker
// on each user's topic and collects events until every marker comes back
// (each user's events travel on their own channel, in order), so nothing is
// waited for by the clock and nothing published before the call is missed.
func (cs *testService) userEvents(t testing.TB, users ...int64) func() map[int64][]map[string]any {
	t.Helper()
	ctx := context.Background()
	type got struct {
		uid int64
		msg live.Message
	}
	ch := make(chan got, 256)
	for _, uid := range users {
		sub, err := live.Subscribe(ctx, cs.redis.Client, live.TopicUser(uid))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		go func() {
			for m := range sub.Channel() {
				if lm, err := live.Decode(m.Payload); err == nil && lm.Topic == live.TopicUser(uid) {
					ch <- got{uid, lm}
				}
			}
		}()
	}
	marks := 0
	return func() map[int64][]map[string]any {
		t.Helper()
		marks++
		mark := fmt.Sprintf(`{"type":"test:mark","mark":%d}`, marks)
		var msgs []live.Message
		for _, uid := range users {
			msgs = append(msgs, live.Message{Topic: live.TopicUser(uid), Event: []byte(mark)})
		}
		if err := cs.Events.PublishAll(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		out := map[int64][]map[string]any{}
		timeout := time.After(time.Minute)
		for waiting := len(users); waiting > 0; {
			select {
			case g := <-ch:
				if string(g.msg.Event) == mark {
					waiting--
					continue
				}
				var ev map[string]any
				if err := json.Unmarshal(g.msg.Event, &ev); err != nil {
					t.Fatal(err)
				}
				if ev["type"] == "test:mark" { // an earlier call's
					continue
				}
				out[g.uid] = append(out[g.uid], ev)
			case <-timeout:
				t.Fatalf("marker %s never came back from every user", mark)
			}
		}
		return out
	}
}

// grabOK grabs and fails the test unless Redis said yes.
func (cs *testService) grabOK(t testing.TB, userID, couponID int64) *model.UserCoupon {
	t.Helper()
	uc, err := cs.Grab(context.Background(), userID, couponID, "")
	if err != nil {
		t.Fatalf("grab by user %d: %v", userID, err)
	}
	return uc
}

// Redis restored from a snapshot taken before two units were sold: it sells
// them again (unit_taken) and lets a holder grab past the limit
// (limit_reached). Every grab answered 201, but the durable record keeps
// stock and limits: the refused grabs are recorded, shown as failed in the
// users' coupon lists, and each user is told by a live event and an inbox
// message. Replaying the batch (a flush that crashed after its commit)
// records and tells nothing twice.
func TestStaleRestoreDurableGuard(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 6, 1, now.Add(-time.Minute), now.Add(time.Hour))
	u := cs.users(t, "stale", 5)
	events := cs.userEvents(t, u...)
	flush := func() {
		t.Helper()
		if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := cs.Get(ctx, c.ID); err != nil { // loaded at creation; this is the backup's moment
		t.Fatal(err)
	}
	before := cs.snapshot(t, c.ID)
	cs.grabOK(t, u[0], c.ID) // unit 1
	cs.grabOK(t, u[1], c.ID) // unit 2
	flush()
	cs.restore(t, c.ID, before)

	// Redis believes nothing was sold: every grab below is a 201.
	stolen := cs.grabOK(t, u[2], c.ID) // unit 1 again: held by u[0]
	again := cs.grabOK(t, u[0], c.ID)  // unit 2 again: held by u[1]
	over := cs.grabOK(t, u[1], c.ID)   // unit 3, free, but u[1] holds its one already
	fresh := cs.grabOK(t, u[3], c.ID)  // unit 4: a genuine sale
	if stolen.ID != coupon.UserCouponID(c.ID, 1) || over.ID != coupon.UserCouponID(c.ID, 3) {
		t.Fatalf("restored Redis handed out %d and %d, want units 1 and 3", stolen.ID, over.ID)
	}
	events() // drop the grabs' own events
	flush()
	got := events()

	// Told: each refused user sees the grab as failed and got a live event.
	for _, f := range []*model.UserCoupon{stolen, again, over} {
		mine, err := cs.UserCoupons(ctx, f.UserID)
		if err != nil {
			t.Fatal(err)
		}
		var failed *model.UserCoupon
		for _, m := range mine {
			if m.ID == f.ID && m.Status == coupon.StatusFailed {
				failed = m
			}
		}
		if failed == nil || failed.CouponID != c.ID || failed.Title != c.Title {
			t.Errorf("user %d's coupons %s: the refused grab %d is not listed as failed", f.UserID, listOf(mine), f.ID)
		}
		if kinds := eventKinds(got[f.UserID]); kinds != "notification:coupon_failed user_coupon:failed" {
			t.Errorf("user %d got live events %q, want the failed coupon and its notification", f.UserID, kinds)
		}
	}
	if evs := got[fresh.UserID]; len(evs) != 0 {
		t.Errorf("user %d, whose grab stood, got live events %v", fresh.UserID, evs)
	}

	// Conserved: no more coupons than stock, none past a user's limit.
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID); n > c.Stock || n != 3 {
		t.Fatalf("SQLite holds %d coupons of stock %d, want 3 (units 1, 2 and 4)", n, c.Stock)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM (SELECT user_id FROM user_coupons WHERE coupon_id = ? GROUP BY user_id HAVING COUNT(*) > ?) AS over_limit`, c.ID, c.LimitPerUser); n != 0 {
		t.Fatalf("%d users hold more than the limit of %d", n, c.LimitPerUser)
	}
	reasons := map[int64]string{}
	rows, err := cs.SQL.R.Query(`SELECT user_id, reason FROM coupon_conflicts WHERE coupon_id = ? AND handled = 1`, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var uid int64
		var r string
		rows.Scan(&uid, &r)
		reasons[uid] = r
	}
	rows.Close()
	want := map[int64]string{u[2]: coupon.ConflictUnitTaken, u[0]: coupon.ConflictUnitTaken, u[1]: coupon.ConflictLimitReached}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Fatalf("recorded conflicts %v, want %v", reasons, want)
	}

	// Replayed after a crash between the commit and the release: nothing new.
	q := coupon.GrabQueue(c.ID)
	for _, rec := range []string{fmt.Sprintf("1:%d:%d", u[2], stolen.GrabbedAt.UnixMilli()), fmt.Sprintf("3:%d:%d", u[1], over.GrabbedAt.UnixMilli()),
		fmt.Sprintf("4:%d:%d", u[3], fresh.GrabbedAt.UnixMilli())} {
		cs.redis.Client.RPush(ctx, q.Processing, rec)
	}
	flush()
	if evs := events(); len(evs) != 0 {
		t.Fatalf("the replay told users again: %v", evs)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_conflicts WHERE coupon_id = ?`, c.ID); n != 3 {
		t.Fatalf("%d conflicts after the replay, want 3", n)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM notifications WHERE coupon_id = ?`, c.ID); n != 3 {
		t.Fatalf("%d notifications after the replay, want 3", n)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID); n != 3 {
		t.Fatalf("%d coupons after the replay, want 3", n)
	}
	// Redis learnt from the refusals: u[1] is at its limit, while u[2], who
	// holds nothing, may try again and gets a unit nobody holds.
	if _, err := cs.Grab(ctx, u[1], c.ID, ""); db.ErrorCode(err) != db.ELIMITREACHED {
		t.Fatalf("u[1] grabbing again: %v, want limit_reached", err)
	}
	if retry := cs.grabOK(t, u[2], c.ID); retry.ID != coupon.UserCouponID(c.ID, 5) {
		t.Fatalf("u[2]'s retry got %d, want unit 5", retry.ID)
	}
	flush()
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ? AND user_id = ?`, c.ID, u[2]); n != 1 {
		t.Fatalf("u[2]'s retry: %d coupons in SQLite, want 1", n)
	}

	// Redis loses the template: it loads back from SQLite past the highest
	// unit held (5), not past the count (4), so the gap the refused unit 3
	// left is not mistaken for a free unit and no grab is refused again.
	rdb.FlushDB(ctx, cs.redis.Client)
	if uc := cs.grabOK(t, u[4], c.ID); uc.ID != coupon.UserCouponID(c.ID, 6) {
		t.Fatalf("grab after Redis lost the template got %d, want unit 6", uc.ID)
	}
	flush()
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_conflicts WHERE coupon_id = ?`, c.ID); n != 3 {
		t.Fatalf("%d conflicts after the reload, want still 3", n)
	}
}

// A conflict found while restored Redis still lags behind SQLite lowers its
// stock to what SQLite leaves, so the units SQLite holds are not sold again.
func TestStaleRestoreLowersStock(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 5, 1, now.Add(-time.Minute), now.Add(time.Hour))
	u := cs.users(t, "lag", 5)
	before := cs.snapshot(t, c.ID)
	for _, uid := range u[:3] {
		cs.grabOK(t, uid, c.ID) // units 1..3
	}
	cs.FlushAll(ctx, cs.FlushGrabs)
	cs.restore(t, c.ID, before)
	cs.grabOK(t, u[3], c.ID) // unit 1 again
	if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil {
		t.Fatal(err)
	}
	if got, err := cs.Get(ctx, c.ID); err != nil || got.Remaining != 2 {
		t.Fatalf("remaining after the conflict = %+v (%v), want 2", got, err)
	}
	if uc := cs.grabOK(t, u[4], c.ID); uc.ID != coupon.UserCouponID(c.ID, 4) {
		t.Fatalf("next grab got %d, want unit 4", uc.ID)
	}
}

// listOf shows a user's coupons as id/status pairs.
func listOf(ucs []*model.UserCoupon) string {
	var parts []string
	for _, u := range ucs {
		parts = append(parts, fmt.Sprintf("%d/%s", u.ID, u.Status))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// eventKinds sums up live events: a notification by its kind, a user coupon by its status.
func eventKinds(evs []map[string]any) string {
	var kinds []string
	for _, ev := range evs {
		switch ev["type"] {
		case "notification":
			n, _ := ev["notification"].(map[string]any)
			kinds = append(kinds, fmt.Sprintf("notification:%v", n["kind"]))
		case "user_coupon":
			uc, _ := ev["user_coupon"].(map[string]any)
			kinds = append(kinds, fmt.Sprintf("user_coupon:%v", uc["status"]))
		default:
			kinds = append(kinds, fmt.Sprint(ev["type"]))
		}
	}
	return strings.Join(kinds, " ")
}

// One batch written by hand, as a corrupt Redis could queue it: the user's
// grabs go in up to the limit, counted in batch order, a grab past the stock
// and one past the limit are kept with their reason, the same record twice is
// one grab, and the batch applied again adds nothing.
func TestApplyGrabsLimitWithinOneBatch(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 5, 2, now.Add(-time.Minute), now.Add(time.Hour))
	u := cs.users(t, "batch", 3)
	ms := now.UnixMilli()
	batch := []string{
		fmt.Sprintf("1:%d:%d", u[0], ms), fmt.Sprintf("2:%d:%d", u[0], ms+1), fmt.Sprintf("3:%d:%d", u[0], ms+2), // the third is past the limit of 2
		fmt.Sprintf("6:%d:%d", u[1], ms+3),                                     // past the stock of 5
		fmt.Sprintf("4:%d:%d", u[2], ms+4), fmt.Sprintf("4:%d:%d", u[2], ms+4), // one grab, queued twice
	}
	q := coupon.GrabQueue(c.ID)
	for range 2 {
		if err := cs.redis.Client.RPush(ctx, q.Processing, batch).Err(); err != nil {
			t.Fatal(err)
		}
		if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil {
			t.Fatal(err)
		}
		held := map[int64]int64{}
		for _, uid := range u {
			held[uid] = cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ? AND user_id = ?`, c.ID, uid)
		}
		if want := map[int64]int64{u[0]: 2, u[1]: 0, u[2]: 1}; fmt.Sprint(held) != fmt.Sprint(want) {
			t.Fatalf("coupons held %v, want %v", held, want)
		}
		if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ? AND id = ?`, c.ID, coupon.UserCouponID(c.ID, 3)); n != 0 {
			t.Fatalf("unit 3 went in past the limit")
		}
		rows, err := cs.SQL.R.Query(`SELECT user_id, unit, reason FROM coupon_conflicts WHERE coupon_id = ? ORDER BY unit`, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var uid, unit int64
			var reason string
			if err := rows.Scan(&uid, &unit, &reason); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d/%d/%s", uid, unit, reason))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		want := []string{fmt.Sprintf("%d/3/%s", u[0], coupon.ConflictLimitReached), fmt.Sprintf("%d/6/%s", u[1], coupon.ConflictNoUnit)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("conflicts %v, want %v", got, want)
		}
	}
}
