package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/tasks"
)

// goodsReminderJSON is one entry of a goods reminder answer or of GET
// /api/me/reminders, with both subjects' IDs to check which one is set.
type goodsReminderJSON struct {
	CouponID      int64     `json:"coupon_id"`
	GoodsID       int64     `json:"goods_id"`
	Title         string    `json:"title"`
	MinutesBefore int       `json:"minutes_before"`
	Channel       string    `json:"channel"`
	RemindAt      time.Time `json:"remind_at"`
}

// goodsRemind books (PUT), cancels (DELETE) or lists (GET) a goods reminder
// and fails the test unless the answer is 200.
func (a *testApp) goodsRemind(method, token string, goodsID int64, minutes int, channel string) []goodsReminderJSON {
	a.T.Helper()
	path := fmt.Sprintf("/api/goods/%d/reminders", goodsID)
	var body any
	switch method {
	case "PUT":
		body = map[string]any{"minutes_before": minutes, "channel": channel}
	case "DELETE":
		path += fmt.Sprintf("?minutes_before=%d&channel=%s", minutes, channel)
	}
	var out struct{ Reminders []goodsReminderJSON }
	if st := a.call(method, path, token, body, &out); st != 200 {
		a.T.Fatalf("%s %s: %d", method, path, st)
	}
	return out.Reminders
}

// leads lists "minutes@remind_at" of reminders.
func leads(rs []goodsReminderJSON) string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d/%s@%s", r.MinutesBefore, r.Channel, r.RemindAt.UTC().Format("15:04:05")))
	}
	return strings.Join(out, " ")
}

func leadsAt(start time.Time, minutes ...int) string {
	var out []string
	for _, m := range minutes {
		out = append(out, fmt.Sprintf("%d/app@%s", m, start.Add(-time.Duration(m)*time.Minute).UTC().Format("15:04:05")))
	}
	return strings.Join(out, " ")
}

// goodsRemindTask is the scheduled fan-out of (goods, start, minutes), or nil.
func (a *testApp) goodsRemindTask(goodsID int64, start time.Time, minutes int) *asynq.TaskInfo {
	a.T.Helper()
	info, err := a.Backend.Queue.GetTaskInfo(tasks.GoodsRemindQueue,
		tasks.GoodsRemindTaskID(tasks.GoodsRemindPayload{GoodsID: goodsID, StartAt: start, MinutesBefore: minutes}))
	if err != nil {
		return nil
	}
	return info
}

// dueAt reports whether the task is due at t (Asynq keeps whole seconds).
func dueAt(info *asynq.TaskInfo, t time.Time) bool {
	return info.NextProcessAt.Equal(t.Truncate(time.Second))
}

func TestGoodsRemindersHTTPContract(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	shopper, _ := a.newUser()
	sl := a.createSlot(merchant, 30*time.Minute, time.Hour)
	g := a.createGoods(merchant, sl.ID, 10, 1)
	start := sl.StartAt
	path := fmt.Sprintf("/api/goods/%d/reminders", g.ID)

	if got, want := leads(a.goodsRemind("PUT", shopper, g.ID, 10, "app")), leadsAt(start, 10); got != want {
		t.Fatalf("booked %q, want %q", got, want)
	}
	a.goodsRemind("PUT", shopper, g.ID, 10, "app") // twice changes nothing
	if got, want := leads(a.goodsRemind("PUT", shopper, g.ID, 20, "app")), leadsAt(start, 10, 20); got != want {
		t.Fatalf("booked %q, want %q", got, want)
	}
	if info := a.goodsRemindTask(g.ID, start, 10); info == nil || !dueAt(info, start.Add(-10*time.Minute)) {
		t.Fatalf("fan-out task of 10 minutes = %+v, want one due at %s", info, start.Add(-10*time.Minute))
	}

	// Bad input: the contract's codes, and nothing changes.
	a.wantError("PUT", path, "", map[string]any{"minutes_before": 5, "channel": "app"}, 401, "unauthorized")
	a.wantError("GET", path, "", nil, 401, "unauthorized")
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 7, "channel": "app"}, 400, "invalid")
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 65, "channel": "app"}, 400, "invalid")
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 5, "channel": "pigeon"}, 400, "invalid")
	a.wantError("PUT", path, shopper, `{"minutes_before": "five"`, 400, "invalid")
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 30, "channel": "app"}, 409, "too_late")
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 60, "channel": "app"}, 409, "too_late")
	for _, ch := range []string{"email", "webhook", "sms", "wechat"} {
		a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 5, "channel": ch}, 409, "not_configured")
	}
	a.wantError("PUT", "/api/goods/999999/reminders", shopper, map[string]any{"minutes_before": 5, "channel": "app"}, 404, "not_found")
	a.wantError("GET", "/api/goods/999999/reminders", shopper, nil, 404, "not_found")
	a.wantError("DELETE", path+"?minutes_before=abc&channel=app", shopper, nil, 400, "invalid")
	a.wantError("DELETE", path+"?minutes_before=5&channel=pigeon", shopper, nil, 400, "invalid")
	if got, want := leads(a.goodsRemind("GET", shopper, g.ID, 0, "")), leadsAt(start, 10, 20); got != want {
		t.Fatalf("after bad input %q, want %q", got, want)
	}
	other, _ := a.newUser()
	if got := a.goodsRemind("GET", other, g.ID, 0, ""); len(got) != 0 {
		t.Fatalf("another user sees %q", leads(got))
	}

	// GET /api/me/reminders: goods entries carry goods_id, coupon entries coupon_id, soonest first.
	c := a.couponCreate(merchant, "Five off", 10, 1, start.Add(time.Hour), start.Add(2*time.Hour))
	a.couponBook(shopper, c.ID, 5, "app")
	var mine struct{ Reminders []goodsReminderJSON }
	if st := a.call("GET", "/api/me/reminders", shopper, nil, &mine); st != 200 || len(mine.Reminders) != 3 {
		t.Fatalf("my reminders: %d %+v", st, mine.Reminders)
	}
	for i, want := range []goodsReminderJSON{{GoodsID: g.ID, MinutesBefore: 20}, {GoodsID: g.ID, MinutesBefore: 10}, {CouponID: c.ID, MinutesBefore: 5}} {
		r := mine.Reminders[i]
		if r.GoodsID != want.GoodsID || r.CouponID != want.CouponID || r.MinutesBefore != want.MinutesBefore || r.Channel != "app" {
			t.Fatalf("my reminder %d = %+v, want %+v", i, r, want)
		}
	}
	if mine.Reminders[0].Title != g.Title {
		t.Fatalf("goods reminder titled %q, want %q", mine.Reminders[0].Title, g.Title)
	}
	raw := map[string][]map[string]any{}
	a.call("GET", "/api/me/reminders", shopper, nil, &raw)
	if _, has := raw["reminders"][0]["coupon_id"]; has {
		t.Fatalf("a goods reminder carries coupon_id: %v", raw["reminders"][0])
	}
	if _, has := raw["reminders"][2]["goods_id"]; has {
		t.Fatalf("a coupon reminder carries goods_id: %v", raw["reminders"][2])
	}

	// Moving the slot moves the reminders and their tasks.
	later := start.Add(45 * time.Minute)
	body := map[string]string{"title": sl.Title, "start_at": later.Format(time.RFC3339Nano), "end_at": later.Add(time.Hour).Format(time.RFC3339Nano)}
	if st := a.call("PUT", fmt.Sprintf("/api/admin/slots/%d", sl.ID), merchant, body, nil); st != 200 {
		t.Fatalf("move slot: %d", st)
	}
	if got, want := leads(a.goodsRemind("GET", shopper, g.ID, 0, "")), leadsAt(later, 10, 20); got != want {
		t.Fatalf("after the move %q, want %q", got, want)
	}
	if a.goodsRemindTask(g.ID, start, 10) != nil {
		t.Fatal("the old start's task is still there")
	}
	if info := a.goodsRemindTask(g.ID, later, 20); info == nil || !dueAt(info, later.Add(-20*time.Minute)) {
		t.Fatalf("fan-out task after the move = %+v", info)
	}

	// Cancelling.
	if got, want := leads(a.goodsRemind("DELETE", shopper, g.ID, 10, "app")), leadsAt(later, 20); got != want {
		t.Fatalf("after cancelling 10 %q, want %q", got, want)
	}
	if got := a.goodsRemind("DELETE", shopper, g.ID, 20, "app"); len(got) != 0 {
		t.Fatalf("after cancelling all %q", leads(got))
	}
	a.call("GET", "/api/me/reminders", shopper, nil, &mine)
	if len(mine.Reminders) != 1 || mine.Reminders[0].CouponID != c.ID {
		t.Fatalf("my reminders after cancelling = %+v", mine.Reminders)
	}

	// Once the sale runs, it is too late for any reminder.
	a.advance(later.Sub(a.Clock.Now()) + time.Second)
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 5, "channel": "app"}, 409, "too_late")
}

// A goods reminder reaches the inbox and the user's socket when its task
// runs at the remind time, found through the injected clock; running the
// task again (Asynq delivers at least once) sends nothing twice, and a
// cancelled booking gets nothing.
func TestGoodsReminderDeliveredAtTheMinute(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	alice, _ := a.newUser()
	bob, _ := a.newUser()
	sl := a.createSlot(merchant, 40*time.Minute, time.Hour)
	g := a.createGoods(merchant, sl.ID, 10, 1)
	start := sl.StartAt
	a.goodsRemind("PUT", alice, g.ID, 10, "app")
	a.goodsRemind("PUT", alice, g.ID, 5, "app")
	a.goodsRemind("PUT", bob, g.ID, 10, "app")
	a.goodsRemind("DELETE", bob, g.ID, 10, "app")

	ws := dialWS(t, a.URL, alice)
	subscribe(t, ws, fmt.Sprintf("goods:%d", g.ID)) // the hub holds the socket, and with it alice's own topic
	bobWS := dialWS(t, a.URL, bob)
	subscribe(t, bobWS, fmt.Sprintf("goods:%d", g.ID))

	remindAt := start.Add(-10 * time.Minute)
	info := a.goodsRemindTask(g.ID, start, 10)
	if info == nil || !dueAt(info, remindAt) || info.Type != tasks.TypeGoodsRemind {
		t.Fatalf("fan-out task = %+v, want %s due at %s", info, tasks.TypeGoodsRemind, remindAt)
	}
	a.advance(remindAt.Sub(a.Clock.Now()))
	// The worker runs the due task (its due time is on the wall clock, so the
	// test hands it over now that the app's clock reads the remind time).
	if err := a.Backend.Queue.RunTask(tasks.GoodsRemindQueue, info.ID); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, ws, func(ev map[string]any) bool { return ev["type"] == "notification" })
	n := ev["notification"].(map[string]any)
	if n["kind"] != "goods_reminder" || n["goods_id"] != float64(g.ID) || !strings.Contains(n["message"].(string), g.Title) ||
		!strings.Contains(n["message"].(string), "10 minutes") {
		t.Fatalf("pushed notification = %v", n)
	}

	// Again and again, straight through the task handler: nothing new.
	h := &tasks.GoodsReminders{Store: a.Goods}
	for range 2 {
		if err := h.Remind(context.Background(), asynq.NewTask(info.Type, info.Payload)); err != nil {
			t.Fatal(err)
		}
	}
	var inbox struct {
		Notifications []struct {
			ID       int64  `json:"id"`
			Kind     string `json:"kind"`
			GoodsID  int64  `json:"goods_id"`
			CouponID int64  `json:"coupon_id"`
			Message  string `json:"message"`
		}
	}
	a.call("GET", "/api/me/notifications", alice, nil, &inbox)
	if len(inbox.Notifications) != 1 || inbox.Notifications[0].GoodsID != g.ID || float64(inbox.Notifications[0].ID) != n["id"] {
		t.Fatalf("alice's inbox = %+v", inbox.Notifications)
	}
	a.call("GET", "/api/me/notifications", bob, nil, &inbox)
	if len(inbox.Notifications) != 0 {
		t.Fatalf("bob cancelled, yet his inbox = %+v", inbox.Notifications)
	}
	var delivered int
	a.SQL.R.QueryRow(`SELECT COUNT(*) FROM goods_reminder_deliveries WHERE goods_id = ?`, g.ID).Scan(&delivered)
	if delivered != 1 {
		t.Fatalf("%d deliveries recorded, want 1", delivered)
	}

	// The 5-minute reminder comes on its own task at its own minute.
	five := a.goodsRemindTask(g.ID, start, 5)
	if five == nil || !dueAt(five, start.Add(-5*time.Minute)) {
		t.Fatalf("5-minute task = %+v", five)
	}
	a.advance(5 * time.Minute)
	if err := a.Backend.Queue.RunTask(tasks.GoodsRemindQueue, five.ID); err != nil {
		t.Fatal(err)
	}
	ev = waitEvent(t, ws, func(ev map[string]any) bool { return ev["type"] == "notification" })
	if n := ev["notification"].(map[string]any); !strings.Contains(n["message"].(string), "5 minutes") {
		t.Fatalf("second notification = %v", n)
	}
	// Bob's socket saw no notification: the first thing it gets after a
	// stock event published now is that event.
	a.Backend.Events.Publish(context.Background(), fmt.Sprintf("goods:%d", g.ID), map[string]any{"type": "probe"})
	if ev := waitEvent(t, bobWS, func(ev map[string]any) bool { return ev["type"] != "subscribed" }); ev["type"] != "probe" {
		raw, _ := json.Marshal(ev)
		t.Fatalf("bob got %s", raw)
	}
}
