package db_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

func reminderPairs(rs []db.BookedReminder) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d/%s", r.MinutesBefore, r.Channel))
	}
	return out
}

func TestReminderBookCancelList(t *testing.T) {
	ctx := context.Background()
	cs := newCouponStore(t)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	uid := insertUsers(t, cs.Store, "b", 1)[0]

	rs, err := cs.BookReminder(ctx, uid, c.ID, 10, db.ChannelApp)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !rs[0].RemindAt.Equal(c.GrabStartAt.Add(-10*time.Minute)) {
		t.Fatalf("reminders = %+v", rs)
	}
	cs.BookReminder(ctx, uid, c.ID, 5, db.ChannelApp)
	rs, err = cs.BookReminder(ctx, uid, c.ID, 5, db.ChannelApp) // booking twice changes nothing
	if want := []string{"5/app", "10/app"}; err != nil || !reflect.DeepEqual(reminderPairs(rs), want) {
		t.Fatalf("reminders = %v, %v; want %v", reminderPairs(rs), err, want)
	}
	rs, err = cs.CancelReminder(ctx, uid, c.ID, 5, db.ChannelApp)
	if want := []string{"10/app"}; err != nil || !reflect.DeepEqual(reminderPairs(rs), want) {
		t.Fatalf("after cancel = %v, %v; want %v", reminderPairs(rs), err, want)
	}
	all, err := cs.UserReminders(ctx, uid)
	if err != nil || len(all) != 1 || all[0].CouponID != c.ID || all[0].Title != "Ten off" {
		t.Fatalf("user reminders = %+v, %v", all, err)
	}
	rs, _ = cs.CancelReminder(ctx, uid, c.ID, 10, db.ChannelApp)
	if len(rs) != 0 || cs.dbCount(t, `SELECT COUNT(*) FROM coupon_reminders WHERE user_id = ?`, uid) != 0 {
		t.Fatalf("a booking with no bits left stays: %v", rs)
	}

	for _, bad := range []struct {
		minutes int
		channel string
		code    string
	}{
		{0, "app", db.EINVALID}, {7, "app", db.EINVALID}, {65, "app", db.EINVALID}, {5, "pigeon", db.EINVALID},
		{5, "sms", db.ENOTCONFIGURED}, {5, "wechat", db.ENOTCONFIGURED},
		{5, "email", db.ENOTCONFIGURED}, {5, "webhook", db.ENOTCONFIGURED},
	} {
		if _, err := cs.BookReminder(ctx, uid, c.ID, bad.minutes, bad.channel); db.ErrorCode(err) != bad.code {
			t.Errorf("book %d/%s: %v, want %s", bad.minutes, bad.channel, err, bad.code)
		}
	}
	if _, err := cs.BookReminder(ctx, uid, 4242, 5, "app"); db.ErrorCode(err) != db.ENOTFOUND {
		t.Errorf("book on a missing coupon: %v", err)
	}
	// email needs both a mail server and the user's address.
	email := "b@example.com"
	account.New(cs.Backend).UpdateSettings(ctx, uid, model.SettingsUpdate{Email: &email})
	if _, err := cs.BookReminder(ctx, uid, c.ID, 5, "email"); db.ErrorCode(err) != db.ENOTCONFIGURED {
		t.Errorf("email without SMTP_URL: %v", err)
	}
	cs.SMTPURL = "smtp://127.0.0.1:2525"
	if _, err := cs.BookReminder(ctx, uid, c.ID, 5, "email"); err != nil {
		t.Errorf("email with an address and a server: %v", err)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_reminders WHERE user_id = ?`, uid); n != 1 {
		t.Fatalf("refused bookings changed the table: %d rows", n)
	}

	// Too late: the reminder time has passed although the window is still ahead.
	close := cs.create(t, 10, 1, now.Add(4*time.Minute), now.Add(time.Hour))
	if _, err := cs.BookReminder(ctx, uid, close.ID, 5, "app"); db.ErrorCode(err) != db.ETOOLATE {
		t.Fatalf("booking after the remind time: %v, want too_late", err)
	}
	if _, err := cs.BookReminder(ctx, uid, close.ID, 60, "app"); db.ErrorCode(err) != db.ETOOLATE {
		t.Fatalf("booking 60 minutes before a start 4 minutes away: %v, want too_late", err)
	}
}

// scheduledReminders lists the fan-out tasks waiting in Asynq.
func scheduledReminders(t testing.TB, s *db.Store) []*tasksInfo {
	t.Helper()
	infos, err := s.Queue.ListScheduledTasks(tasks.QueueDefault)
	if err != nil {
		t.Fatal(err)
	}
	var out []*tasksInfo
	for _, ti := range infos {
		if ti.Type == tasks.TypeCouponRemind {
			out = append(out, &tasksInfo{ID: ti.ID, At: ti.NextProcessAt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

type tasksInfo struct {
	ID string
	At time.Time
}

// However many users book, each (template, lead time) has one task.
func TestReminderOneTaskPerLeadTime(t *testing.T) {
	ctx := context.Background()
	cs := newCouponStore(t)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := insertUsers(t, cs.Store, "many", 300)
	var wg sync.WaitGroup
	release := make(chan struct{})
	errs := make(chan error, len(users))
	for i, uid := range users {
		wg.Add(1)
		go func(i int, uid int64) {
			defer wg.Done()
			<-release
			_, err := cs.BookReminder(ctx, uid, c.ID, []int{5, 10, 30}[i%3], db.ChannelApp)
			errs <- err
		}(i, uid)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := scheduledReminders(t, cs.Store)
	if len(got) != 3 {
		t.Fatalf("%d reminder tasks, want 3: %v", len(got), got)
	}
	for i, m := range []int{10, 30, 5} { // sorted by ID
		want := db.CouponRemindTaskID(db.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: m})
		if got[i].ID != want || !got[i].At.Equal(c.GrabStartAt.Add(-time.Duration(m)*time.Minute)) {
			t.Errorf("task %d = %s at %s, want %s at %d minutes before the start", i, got[i].ID, got[i].At, want, m)
		}
	}
}

// The fan-out notifies every booking of the lead time once across pages,
// skips cancelled bookings, and does nothing more when it runs again.
func TestReminderFanOutApp(t *testing.T) {
	ctx := context.Background()
	cs := newCouponStore(t)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := insertUsers(t, cs.Store, "fan", 2*db.ReminderPageSize+300)
	for i, uid := range users {
		if _, err := cs.BookReminder(ctx, uid, c.ID, 5, db.ChannelApp); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			cs.BookReminder(ctx, uid, c.ID, 15, db.ChannelApp)
		}
	}
	cancelled := map[int64]bool{}
	for _, uid := range users[:100] {
		cs.CancelReminder(ctx, uid, c.ID, 5, db.ChannelApp)
		cancelled[uid] = true
	}
	p := db.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}
	for run := 0; run < 2; run++ {
		if err := cs.SendReminders(ctx, p); err != nil {
			t.Fatal(err)
		}
		want := int64(len(users) - 100)
		if n := cs.dbCount(t, `SELECT COUNT(*) FROM notifications WHERE coupon_id = ?`, c.ID); n != want {
			t.Fatalf("run %d: %d notifications, want %d", run, n, want)
		}
		if n := cs.dbCount(t, `SELECT COUNT(DISTINCT user_id) FROM notifications WHERE coupon_id = ?`, c.ID); n != want {
			t.Fatalf("run %d: %d users notified, want %d", run, n, want)
		}
		if n := cs.dbCount(t, `SELECT COUNT(*) FROM reminder_deliveries WHERE template_id = ? AND channel = 'app' AND status = 'sent'`, c.ID); n != want {
			t.Fatalf("run %d: %d deliveries recorded, want %d", run, n, want)
		}
	}
	for uid := range cancelled {
		if n := cs.dbCount(t, `SELECT COUNT(*) FROM notifications WHERE user_id = ?`, uid); n != 0 {
			t.Fatalf("cancelled booking of user %d got %d notifications", uid, n)
		}
	}
	inbox, err := cs.Notifications(ctx, users[200])
	if err != nil || len(inbox) != 1 || inbox[0].Read || inbox[0].CouponID != c.ID || inbox[0].Kind != "coupon_reminder" {
		t.Fatalf("inbox = %+v, %v", inbox, err)
	}
	if n, _ := cs.UnreadNotifications(ctx, users[200]); n != 1 {
		t.Fatalf("unread = %d, want 1", n)
	}
	cs.MarkNotificationsRead(ctx, users[200])
	if n, _ := cs.UnreadNotifications(ctx, users[200]); n != 0 {
		t.Fatalf("unread after marking = %d, want 0", n)
	}
	st, err := cs.CouponStats(ctx, model.Claims{UserID: cs.merchant, Role: model.RoleMerchant}, c.ID)
	if err != nil || st.BookingsOf(5, "app") != int64(len(users)-100) || st.BookingsOf(15, "app") != int64((len(users)+1)/2) || st.Deliveries["app"]["sent"] != int64(len(users)-100) {
		t.Fatalf("stats = %+v, %v", st, err)
	}
}

// Moving the start deletes the old tasks and schedules new ones; a task of
// the old start that runs anyway sends nothing.
func TestReminderReschedule(t *testing.T) {
	ctx := context.Background()
	cs := newCouponStore(t)
	now := time.Now().Truncate(time.Second)
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	uid := insertUsers(t, cs.Store, "move", 1)[0]
	cs.BookReminder(ctx, uid, c.ID, 5, db.ChannelApp)
	cs.BookReminder(ctx, uid, c.ID, 15, db.ChannelApp)
	if n := len(scheduledReminders(t, cs.Store)); n != 2 {
		t.Fatalf("%d tasks before the move, want 2", n)
	}
	actor := model.Claims{UserID: cs.merchant, Role: model.RoleMerchant}
	if _, err := cs.UpdateCouponWindow(ctx, model.Claims{UserID: uid, Role: model.RoleMerchant}, c.ID, now.Add(4*time.Hour), now.Add(5*time.Hour)); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("another merchant moved the coupon: %v", err)
	}
	if _, err := cs.UpdateCouponWindow(ctx, actor, c.ID, now.Add(4*time.Hour), now.Add(3*time.Hour)); db.ErrorCode(err) != db.EINVALID {
		t.Fatalf("end before start: %v, want invalid", err)
	}
	newStart := now.Add(4 * time.Hour)
	moved, err := cs.UpdateCouponWindow(ctx, actor, c.ID, newStart, now.Add(5*time.Hour))
	if err != nil || !moved.GrabStartAt.Equal(newStart) {
		t.Fatalf("move = %+v, %v", moved, err)
	}
	got := scheduledReminders(t, cs.Store)
	if len(got) != 2 {
		t.Fatalf("%d tasks after the move, want 2: %v", len(got), got)
	}
	for _, ti := range got {
		if !ti.At.After(now.Add(3 * time.Hour)) {
			t.Fatalf("task %s still due at the old time %s", ti.ID, ti.At)
		}
	}
	rs, _ := cs.UserReminders(ctx, uid)
	if len(rs) != 2 || !rs[0].RemindAt.Equal(newStart.Add(-15*time.Minute)) {
		t.Fatalf("reminders after the move = %+v", rs)
	}
	old := db.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}
	if err := cs.SendReminders(ctx, old); err != nil {
		t.Fatal(err)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM notifications`); n != 0 {
		t.Fatalf("a task of the old start sent %d notifications", n)
	}
	// The grab window in Redis moved too.
	if _, err := cs.GrabCoupon(ctx, uid, c.ID, ""); db.ErrorCode(err) != db.ENOTSTARTED {
		t.Fatalf("grab before the moved window: %v", err)
	}
}

// Reminder tasks lost with Redis come back for templates opening within the
// hour; later ones come back when their hour comes.
func TestEnsureReminderTasks(t *testing.T) {
	ctx := context.Background()
	cs := newCouponStore(t)
	now := time.Now()
	soon := cs.create(t, 10, 1, now.Add(30*time.Minute), now.Add(2*time.Hour))
	later := cs.create(t, 10, 1, now.Add(3*time.Hour), now.Add(4*time.Hour))
	uid := insertUsers(t, cs.Store, "ens", 1)[0]
	cs.BookReminder(ctx, uid, soon.ID, 5, db.ChannelApp)
	cs.BookReminder(ctx, uid, soon.ID, 20, db.ChannelEmail+"x") // refused: changes nothing
	cs.BookReminder(ctx, uid, soon.ID, 20, db.ChannelApp)
	cs.BookReminder(ctx, uid, later.ID, 60, db.ChannelApp)
	if err := cs.EnsureReminderTasks(ctx); err != nil || len(scheduledReminders(t, cs.Store)) != 3 {
		t.Fatalf("ensure with every task present: %v, %d tasks", err, len(scheduledReminders(t, cs.Store)))
	}
	if _, err := cs.Queue.DeleteAllScheduledTasks(tasks.QueueDefault); err != nil {
		t.Fatal(err)
	}
	if err := cs.EnsureReminderTasks(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range scheduledReminders(t, cs.Store) {
		ids = append(ids, ti.ID)
	}
	want := []string{
		db.CouponRemindTaskID(db.CouponRemindPayload{CouponID: soon.ID, GrabStartAt: soon.GrabStartAt, MinutesBefore: 20}),
		db.CouponRemindTaskID(db.CouponRemindPayload{CouponID: soon.ID, GrabStartAt: soon.GrabStartAt, MinutesBefore: 5}),
	}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("tasks after ensure = %v, want %v", ids, want)
	}
	// Two hours on, the later template's hour has come.
	cs.Now = func() time.Time { return now.Add(2*time.Hour + 30*time.Minute) }
	cs.EnsureReminderTasks(ctx)
	if n := len(scheduledReminders(t, cs.Store)); n != 3 {
		t.Fatalf("%d tasks once the later template is within the hour, want 3", n)
	}
}
