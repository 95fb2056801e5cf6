package coupon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
	"github.com/seckill/seckill/tasks"
)

// timesMigration is the migration that turned the area's text times into unix milliseconds.
const timesMigration = "0007_coupon_times.sql"

// Rows the previous release wrote with text times (RFC 3339 for grab
// windows, RFC 3339 with nanoseconds elsewhere, trailing zeros trimmed) read
// back through the services after the migration as the same instants, to
// the millisecond; the delivery key still matches what the service writes;
// IDs are not reused; foreign keys and indexes survive.
func TestCouponTimesMigration(t *testing.T) {
	ctx := context.Background()
	path, old := dbtest.SQLiteBefore(t, timesMigration)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := old.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, name := range []string{"shop", "alice", "bob"} {
		exec(`INSERT INTO users (username, password_hash, role, created_at) VALUES (?, 'x', 'user', '2030-01-01T00:00:00Z')`, name)
	}
	const shop, alice, bob = 1, 2, 3
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	nano := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

	start := time.Date(2030, 3, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	created := time.Date(2030, 2, 1, 9, 30, 15, 123456789, time.UTC)
	exec(`INSERT INTO coupons (id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_at, grab_end_at, valid_days, created_at)
		VALUES (7, ?, 'Old ten off', 'amount_off', 1000, 5000, 100, 1, ?, ?, 7, ?)`, shop, rfc(start), rfc(end), nano(created))
	// A template created and deleted later: the counter stays past it.
	exec(`INSERT INTO coupons (id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_at, grab_end_at, valid_days, created_at)
		VALUES (9, ?, 'Gone', 'percent_off', 10, 0, 1, 1, ?, ?, 1, ?)`, shop, rfc(start), rfc(end), nano(created))
	exec(`DELETE FROM coupons WHERE id = 9`)

	grabs := map[int64]time.Time{ // user coupon ID → grabbed at, each a text form RFC3339Nano writes
		coupon.UserCouponID(7, 1): start.Add(1 * time.Second),                      // no fraction
		coupon.UserCouponID(7, 2): start.Add(2*time.Second + 500*time.Millisecond), // one digit
		coupon.UserCouponID(7, 3): start.Add(3*time.Second + 120*time.Millisecond), // two digits
		coupon.UserCouponID(7, 4): start.Add(4*time.Second + 123456*time.Microsecond),
		coupon.UserCouponID(7, 5): start.Add(5*time.Second + 999999999),
	}
	for id, at := range grabs {
		exec(`INSERT INTO user_coupons (id, coupon_id, user_id, status, grabbed_at, valid_until) VALUES (?, 7, ?, 'unused', ?, ?)`,
			id, alice, nano(at), nano(coupon.ValidUntil(at, 7)))
	}

	app5, _ := coupon.ReminderBit(5, model.ChannelApp)
	hook5, _ := coupon.ReminderBit(5, model.ChannelWebhook)
	booked := created.Add(time.Hour)
	exec(`INSERT INTO coupon_reminders (user_id, template_id, bits, grab_start_at, shop_id, updated_at) VALUES (?, 7, ?, ?, ?, ?), (?, 7, ?, ?, ?, ?)`,
		alice, app5, rfc(start), shop, nano(booked), bob, app5|hook5, rfc(start), shop, nano(booked))
	// alice's app reminder went out; bob's webhook failed once and waits for its retry.
	sent := start.Add(-5*time.Minute + 250*time.Millisecond)
	exec(`INSERT INTO reminder_deliveries (template_id, grab_start_at, minutes_before, channel, user_id, status, attempts, created_at, sent_at)
		VALUES (7, ?, 5, 'app', ?, 'sent', 1, ?, ?), (7, ?, 5, 'webhook', ?, 'retrying', 1, ?, NULL)`,
		rfc(start), alice, nano(sent), nano(sent), rfc(start), bob, nano(sent))
	exec(`INSERT INTO notifications (id, user_id, kind, coupon_id, message, created_at) VALUES (5, ?, 'coupon_reminder', 7, 'soon', ?), (6, ?, 'coupon_reminder', 7, 'gone', ?)`,
		alice, nano(sent), alice, nano(sent))
	exec(`DELETE FROM notifications WHERE id = 6`)
	old.Close()

	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	r := dbtest.Redis(t)
	b := backend.New(sq, r.Client)
	b.Tasks, b.Queue = asynq.NewClientFromRedisClient(r.Client), asynq.NewInspectorFromRedisClient(r.Client)
	b.Now = func() time.Time { return start.Add(-time.Hour) }
	cs := &coupon.Service{Backend: b, Settings: sqlSettings{sq}}
	box := &inbox.Service{Backend: b}

	c, err := cs.Get(ctx, 7)
	if err != nil || !c.GrabStartAt.Equal(start) || !c.GrabEndAt.Equal(end) || c.Remaining != 100-int64(len(grabs)) {
		t.Fatalf("coupon = %+v, %v; want the window %s – %s with %d left", c, err, start, end, 100-len(grabs))
	}
	var createdMS int64
	sq.R.QueryRow(`SELECT created_ms FROM coupons WHERE id = 7`).Scan(&createdMS)
	if createdMS != created.UnixMilli() {
		t.Errorf("created_ms = %d, want %d", createdMS, created.UnixMilli())
	}

	mine, err := cs.UserCoupons(ctx, alice)
	if err != nil || len(mine) != len(grabs) {
		t.Fatalf("alice's coupons = %v, %v; want %d", mine, err, len(grabs))
	}
	for _, u := range mine {
		want := grabs[u.ID].Truncate(time.Millisecond)
		if !u.GrabbedAt.Equal(want) || !u.ValidUntil.Equal(want.AddDate(0, 0, 7)) {
			t.Errorf("coupon %d grabbed %s, valid until %s; want %s and 7 days on", u.ID, u.GrabbedAt, u.ValidUntil, want)
		}
	}

	rs, err := cs.UserReminders(ctx, alice)
	if err != nil || len(rs) != 1 || !rs[0].RemindAt.Equal(start.Add(-5*time.Minute)) {
		t.Fatalf("alice's reminders = %+v, %v", rs, err)
	}

	// The fan-out finds alice's delivery under the migrated key and sends only bob's.
	if err := cs.SendReminders(ctx, tasks.CouponRemindPayload{CouponID: 7, GrabStartAt: start, MinutesBefore: 5}); err != nil {
		t.Fatal(err)
	}
	aliceBox, err := box.List(ctx, alice)
	if err != nil || len(aliceBox) != 1 || aliceBox[0].ID != 5 || !aliceBox[0].CreatedAt.Equal(sent) {
		t.Fatalf("alice's inbox = %+v, %v; want the one from before at %s", aliceBox, err, sent)
	}
	bobBox, err := box.List(ctx, bob)
	if err != nil || len(bobBox) != 1 || bobBox[0].ID != 7 {
		t.Fatalf("bob's inbox = %+v, %v; want one new notification, ID 7 (6 was taken)", bobBox, err)
	}
	// The retry finds bob's webhook delivery under the migrated key (he has no URL: skipped).
	if err := cs.RetryDelivery(ctx, tasks.CouponDeliverPayload{CouponID: 7, GrabStartAt: start, MinutesBefore: 5, Channel: model.ChannelWebhook, UserID: bob, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	counts, err := cs.DeliveryCounts(ctx, 7)
	if err != nil || counts["app"]["sent"] != 2 || counts["webhook"]["skipped"] != 1 || len(counts["webhook"]) != 1 {
		t.Fatalf("deliveries = %v, %v; want 2 app sent and bob's webhook skipped", counts, err)
	}
	var sentMS int64
	sq.R.QueryRow(`SELECT sent_ms FROM reminder_deliveries WHERE channel = 'app' AND user_id = ?`, alice).Scan(&sentMS)
	if sentMS != sent.UnixMilli() {
		t.Errorf("sent_ms = %d, want %d", sentMS, sent.UnixMilli())
	}

	next, err := cs.Create(ctx, shop, model.CouponInput{Title: "New", Kind: model.CouponPercentOff, Value: 5, Stock: 1,
		GrabStartAt: start, GrabEndAt: end})
	if err != nil || next.ID != 10 {
		t.Fatalf("new coupon = %+v, %v; want ID 10 (9 was taken)", next, err)
	}

	var dangling int
	rows, err := sq.R.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		dangling++
	}
	rows.Close()
	if dangling != 0 {
		t.Errorf("%d rows break a foreign key", dangling)
	}
	var indexes []string
	rows, err = sq.R.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'
		AND tbl_name IN ('coupons', 'user_coupons', 'coupon_reminders', 'reminder_deliveries', 'notifications') ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		indexes = append(indexes, n)
	}
	rows.Close()
	want := []string{"coupon_reminders_template", "coupons_end", "coupons_shop", "notifications_unread", "notifications_user",
		"reminder_deliveries_lease", "user_coupons_coupon", "user_coupons_unused_until", "user_coupons_used",
		"user_coupons_user"} // the lease index comes with 0009, the unused and used ones with 0011
	if strings.Join(indexes, " ") != strings.Join(want, " ") {
		t.Errorf("indexes %v, want %v", indexes, want)
	}
	var leftover int
	sq.R.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%_old'`).Scan(&leftover)
	if leftover != 0 {
		t.Errorf("%d old tables or indexes left", leftover)
	}
}

// guardsMigration is the migration that gave deliveries their lease and added coupon_conflicts.
const guardsMigration = "0009_coupon_guards.sql"

// A webhook delivery a worker of the previous release claimed and never
// finished is over its lease once migrated, and the sweep sends it; a
// delivery waiting for its retry task is left to the task for the longest
// retry delay.
func TestDeliveryLeaseMigration(t *testing.T) {
	ctx := context.Background()
	srv, hits := countingServer(t)
	path, old := dbtest.SQLiteBefore(t, guardsMigration)
	now := time.Now()
	start := now.Add(2 * time.Hour)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := old.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO users (id, username, password_hash, role, created_ms, webhook_url) VALUES (1, 'shop', 'x', 'user', 1893456000000, ''),
		(2, 'stuck', 'x', 'user', 1893456000000, ?), (3, 'waiting', 'x', 'user', 1893456000000, ?)`, srv.URL+"/hook", srv.URL+"/hook")
	exec(`INSERT INTO coupons (id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_ms, grab_end_ms, valid_days, created_ms)
		VALUES (1, 1, 'Old', 'amount_off', 100, 0, 10, 1, ?, ?, 7, ?)`, start.UnixMilli(), start.Add(time.Hour).UnixMilli(), now.UnixMilli())
	hook5, _ := coupon.ReminderBit(5, model.ChannelWebhook)
	exec(`INSERT INTO coupon_reminders (user_id, template_id, bits, grab_start_ms, shop_id, updated_ms) VALUES (2, 1, ?, ?, 1, ?), (3, 1, ?, ?, 1, ?)`,
		hook5, start.UnixMilli(), now.UnixMilli(), hook5, start.UnixMilli(), now.UnixMilli())
	claimed := now.Add(-10 * time.Minute)
	exec(`INSERT INTO reminder_deliveries (template_id, grab_start_ms, minutes_before, channel, user_id, status, attempts, created_ms)
		VALUES (1, ?, 5, 'webhook', 2, 'pending', 1, ?), (1, ?, 5, 'webhook', 3, 'retrying', 1, ?)`,
		start.UnixMilli(), claimed.UnixMilli(), start.UnixMilli(), claimed.UnixMilli())
	old.Close()

	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	r := dbtest.Redis(t)
	b := backend.New(sq, r.Client)
	b.Tasks, b.Queue = asynq.NewClientFromRedisClient(r.Client), asynq.NewInspectorFromRedisClient(r.Client)
	b.Now = func() time.Time { return now }
	cs := &coupon.Service{Backend: b, Settings: sqlSettings{sq}, WebhookAllowPrivate: true}
	var waitingLease int64
	sq.R.QueryRow(`SELECT lease_until_ms FROM reminder_deliveries WHERE user_id = 3`).Scan(&waitingLease)
	if w := now.Add(time.Hour).UnixMilli(); waitingLease < w {
		t.Fatalf("the retrying delivery's lease ends at %d, want after %d", waitingLease, w)
	}
	if err := cs.SweepDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests after the sweep, want the stuck delivery's 1", n)
	}
	counts, err := cs.DeliveryCounts(ctx, 1)
	if err != nil || counts["webhook"]["sent"] != 1 || counts["webhook"]["retrying"] != 1 {
		t.Fatalf("deliveries = %v, %v; want the stuck one sent and the waiting one retrying", counts, err)
	}
}
