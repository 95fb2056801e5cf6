package coupon_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

func reminderPairs(rs []model.BookedReminder) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d/%s", r.MinutesBefore, r.Channel))
	}
	return out
}

func TestReminderBookCancelList(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	uid := cs.users(t, "b", 1)[0]

	rs, err := cs.Book(ctx, uid, c.ID, 10, model.ChannelApp)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || !rs[0].RemindAt.Equal(c.GrabStartAt.Add(-10*time.Minute)) {
		t.Fatalf("reminders = %+v", rs)
	}
	cs.Book(ctx, uid, c.ID, 5, model.ChannelApp)
	rs, err = cs.Book(ctx, uid, c.ID, 5, model.ChannelApp) // booking twice changes nothing
	if want := []string{"5/app", "10/app"}; err != nil || !reflect.DeepEqual(reminderPairs(rs), want) {
		t.Fatalf("reminders = %v, %v; want %v", reminderPairs(rs), err, want)
	}
	rs, err = cs.Cancel(ctx, uid, c.ID, 5, model.ChannelApp)
	if want := []string{"10/app"}; err != nil || !reflect.DeepEqual(reminderPairs(rs), want) {
		t.Fatalf("after cancel = %v, %v; want %v", reminderPairs(rs), err, want)
	}
	all, err := cs.UserReminders(ctx, uid)
	if err != nil || len(all) != 1 || all[0].CouponID != c.ID || all[0].Title != "Ten off" {
		t.Fatalf("user reminders = %+v, %v", all, err)
	}
	rs, _ = cs.Cancel(ctx, uid, c.ID, 10, model.ChannelApp)
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
		if _, err := cs.Book(ctx, uid, c.ID, bad.minutes, bad.channel); db.ErrorCode(err) != bad.code {
			t.Errorf("book %d/%s: %v, want %s", bad.minutes, bad.channel, err, bad.code)
		}
	}
	if _, err := cs.Book(ctx, uid, 4242, 5, "app"); db.ErrorCode(err) != db.ENOTFOUND {
		t.Errorf("book on a missing coupon: %v", err)
	}
	// email needs both a mail server and the user's address.
	setEmail(t, cs, uid, "b@example.com")
	if _, err := cs.Book(ctx, uid, c.ID, 5, "email"); db.ErrorCode(err) != db.ENOTCONFIGURED {
		t.Errorf("email without SMTP_URL: %v", err)
	}
	cs.SMTPURL = "smtp://127.0.0.1:2525"
	if _, err := cs.Book(ctx, uid, c.ID, 5, "email"); err != nil {
		t.Errorf("email with an address and a server: %v", err)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_reminders WHERE user_id = ?`, uid); n != 1 {
		t.Fatalf("refused bookings changed the table: %d rows", n)
	}

	// Too late: the reminder time has passed although the window is still ahead.
	close := cs.create(t, 10, 1, now.Add(4*time.Minute), now.Add(time.Hour))
	if _, err := cs.Book(ctx, uid, close.ID, 5, "app"); db.ErrorCode(err) != db.ETOOLATE {
		t.Fatalf("booking after the remind time: %v, want too_late", err)
	}
	if _, err := cs.Book(ctx, uid, close.ID, 60, "app"); db.ErrorCode(err) != db.ETOOLATE {
		t.Fatalf("booking 60 minutes before a start 4 minutes away: %v, want too_late", err)
	}
}

// scheduledReminders lists the fan-out tasks waiting in Asynq.
func scheduledReminders(t testing.TB, s *coupon.Service) []*tasksInfo {
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
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := cs.users(t, "many", 300)
	var wg sync.WaitGroup
	release := make(chan struct{})
	errs := make(chan error, len(users))
	for i, uid := range users {
		wg.Add(1)
		go func(i int, uid int64) {
			defer wg.Done()
			<-release
			_, err := cs.Book(ctx, uid, c.ID, []int{5, 10, 30}[i%3], model.ChannelApp)
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
	got := scheduledReminders(t, cs.Service)
	if len(got) != 3 {
		t.Fatalf("%d reminder tasks, want 3: %v", len(got), got)
	}
	for i, m := range []int{10, 30, 5} { // sorted by ID
		want := tasks.CouponRemindTaskID(tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: m})
		if got[i].ID != want || !got[i].At.Equal(c.GrabStartAt.Add(-time.Duration(m)*time.Minute)) {
			t.Errorf("task %d = %s at %s, want %s at %d minutes before the start", i, got[i].ID, got[i].At, want, m)
		}
	}
}

// The fan-out notifies every booking of the lead time once across pages,
// skips cancelled bookings, and does nothing more when it runs again.
func TestReminderFanOutApp(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := cs.users(t, "fan", 2*coupon.ReminderPageSize+300)
	for i, uid := range users {
		if _, err := cs.Book(ctx, uid, c.ID, 5, model.ChannelApp); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			cs.Book(ctx, uid, c.ID, 15, model.ChannelApp)
		}
	}
	cancelled := map[int64]bool{}
	for _, uid := range users[:100] {
		cs.Cancel(ctx, uid, c.ID, 5, model.ChannelApp)
		cancelled[uid] = true
	}
	p := tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}
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
	inbox, err := cs.inbox.List(ctx, users[200])
	if err != nil || len(inbox) != 1 || inbox[0].Read || inbox[0].CouponID != c.ID || inbox[0].Kind != "coupon_reminder" {
		t.Fatalf("inbox = %+v, %v", inbox, err)
	}
	if n, _ := cs.inbox.Unread(ctx, users[200]); n != 1 {
		t.Fatalf("unread = %d, want 1", n)
	}
	cs.inbox.MarkRead(ctx, users[200])
	if n, _ := cs.inbox.Unread(ctx, users[200]); n != 0 {
		t.Fatalf("unread after marking = %d, want 0", n)
	}
	st, err := cs.Stats(ctx, model.Claims{UserID: cs.merchant, Role: model.RoleMerchant}, c.ID)
	if err != nil || st.BookingsOf(5, "app") != int64(len(users)-100) || st.BookingsOf(15, "app") != int64((len(users)+1)/2) || st.Deliveries["app"]["sent"] != int64(len(users)-100) {
		t.Fatalf("stats = %+v, %v", st, err)
	}
}

// Moving the start deletes the old tasks and schedules new ones; a task of
// the old start that runs anyway sends nothing.
func TestReminderReschedule(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now().Truncate(time.Second)
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	uid := cs.users(t, "move", 1)[0]
	cs.Book(ctx, uid, c.ID, 5, model.ChannelApp)
	cs.Book(ctx, uid, c.ID, 15, model.ChannelApp)
	if n := len(scheduledReminders(t, cs.Service)); n != 2 {
		t.Fatalf("%d tasks before the move, want 2", n)
	}
	actor := model.Claims{UserID: cs.merchant, Role: model.RoleMerchant}
	if _, err := cs.MoveWindow(ctx, model.Claims{UserID: uid, Role: model.RoleMerchant}, c.ID, now.Add(4*time.Hour), now.Add(5*time.Hour)); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("another merchant moved the coupon: %v", err)
	}
	if _, err := cs.MoveWindow(ctx, actor, c.ID, now.Add(4*time.Hour), now.Add(3*time.Hour)); db.ErrorCode(err) != db.EINVALID {
		t.Fatalf("end before start: %v, want invalid", err)
	}
	newStart := now.Add(4 * time.Hour)
	moved, err := cs.MoveWindow(ctx, actor, c.ID, newStart, now.Add(5*time.Hour))
	if err != nil || !moved.GrabStartAt.Equal(newStart) {
		t.Fatalf("move = %+v, %v", moved, err)
	}
	got := scheduledReminders(t, cs.Service)
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
	old := tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}
	if err := cs.SendReminders(ctx, old); err != nil {
		t.Fatal(err)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM notifications`); n != 0 {
		t.Fatalf("a task of the old start sent %d notifications", n)
	}
	// The grab window in Redis moved too.
	if _, err := cs.Grab(ctx, uid, c.ID, ""); db.ErrorCode(err) != db.ENOTSTARTED {
		t.Fatalf("grab before the moved window: %v", err)
	}
}

// Reminder tasks lost with Redis come back for templates opening within the
// hour; later ones come back when their hour comes.
func TestEnsureReminderTasks(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	soon := cs.create(t, 10, 1, now.Add(30*time.Minute), now.Add(2*time.Hour))
	later := cs.create(t, 10, 1, now.Add(3*time.Hour), now.Add(4*time.Hour))
	uid := cs.users(t, "ens", 1)[0]
	cs.Book(ctx, uid, soon.ID, 5, model.ChannelApp)
	cs.Book(ctx, uid, soon.ID, 20, model.ChannelEmail+"x") // refused: changes nothing
	cs.Book(ctx, uid, soon.ID, 20, model.ChannelApp)
	cs.Book(ctx, uid, later.ID, 60, model.ChannelApp)
	if err := cs.EnsureReminderTasks(ctx); err != nil || len(scheduledReminders(t, cs.Service)) != 3 {
		t.Fatalf("ensure with every task present: %v, %d tasks", err, len(scheduledReminders(t, cs.Service)))
	}
	if _, err := cs.Queue.DeleteAllScheduledTasks(tasks.QueueDefault); err != nil {
		t.Fatal(err)
	}
	if err := cs.EnsureReminderTasks(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ti := range scheduledReminders(t, cs.Service) {
		ids = append(ids, ti.ID)
	}
	want := []string{
		tasks.CouponRemindTaskID(tasks.CouponRemindPayload{CouponID: soon.ID, GrabStartAt: soon.GrabStartAt, MinutesBefore: 20}),
		tasks.CouponRemindTaskID(tasks.CouponRemindPayload{CouponID: soon.ID, GrabStartAt: soon.GrabStartAt, MinutesBefore: 5}),
	}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("tasks after ensure = %v, want %v", ids, want)
	}
	// Two hours on, the later template's hour has come.
	cs.Now = func() time.Time { return now.Add(2*time.Hour + 30*time.Minute) }
	cs.EnsureReminderTasks(ctx)
	if n := len(scheduledReminders(t, cs.Service)); n != 3 {
		t.Fatalf("%d tasks once the later template is within the hour, want 3", n)
	}
}

// Bookings released all at once while the merchant moves the window three
// times: every booking ends at the start the template has, whichever came
// first (on PostgreSQL they run side by side: a booking reads the template
// under a share lock, so it either waits for a move or is moved by it); and
// two moves of one window read at the same moment never both pass.
func TestBookingsRacingMovesFollowTheWindow(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now().Truncate(time.Second)
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	const bookers = 200
	users := cs.users(t, "race", bookers)
	actor := model.Claims{UserID: cs.merchant, Role: model.RoleMerchant}
	start := make(chan struct{})
	errs := make(chan error, bookers+1)
	var wg sync.WaitGroup
	for _, uid := range users {
		wg.Add(1)
		go func(uid int64) {
			defer wg.Done()
			<-start
			_, err := cs.Book(ctx, uid, c.ID, 5, model.ChannelApp)
			errs <- err
		}(uid)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for h := 4; h <= 6; h++ {
			if _, err := cs.MoveWindow(ctx, actor, c.ID, now.Add(time.Duration(h)*time.Hour), now.Add(time.Duration(h+1)*time.Hour)); err != nil {
				errs <- fmt.Errorf("move to +%dh: %w", h, err)
				return
			}
		}
		errs <- nil
	}()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_reminders WHERE template_id = ?`, c.ID); n != bookers {
		t.Fatalf("%d bookings stored, want %d", n, bookers)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_reminders r JOIN coupons c ON c.id = r.template_id
		WHERE r.template_id = ? AND r.grab_start_ms != c.grab_start_ms`, c.ID); n != 0 {
		t.Fatalf("%d bookings kept a start the template no longer has", n)
	}

	// Two moves that read the same window: one passes, the other is told to reload.
	moves := make(chan error, 2)
	for _, h := range []int{8, 9} {
		go func(h int) {
			_, err := cs.MoveWindow(ctx, actor, c.ID, now.Add(time.Duration(h)*time.Hour), now.Add(time.Duration(h+1)*time.Hour))
			moves <- err
		}(h)
	}
	var passed int
	for range 2 {
		switch err := <-moves; {
		case err == nil:
			passed++
		case db.ErrorCode(err) != db.ECONFLICT:
			t.Fatalf("a racing move: %v, want success or a conflict", err)
		}
	}
	if passed == 0 {
		t.Fatal("neither of two racing moves passed")
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_reminders r JOIN coupons c ON c.id = r.template_id
		WHERE r.template_id = ? AND r.grab_start_ms != c.grab_start_ms`, c.ID); n != 0 {
		t.Fatalf("after the racing moves %d bookings kept a start the template no longer has", n)
	}
}
