package remind_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/remind"
	"github.com/seckill/seckill/tasks"
)

// One behaviour suite of the booking machinery, run against every area that
// books reminders on it: each subject says how to make one, move its start
// and run its fan-out; the suite books, cancels, lists, moves and delivers.

// env is a backend over a fresh Redis and store with a settable clock, a
// merchant and the two areas' services on it.
type env struct {
	t        *testing.T
	ctx      context.Context
	b        *backend.Backend
	clk      *dbtest.Clock
	merchant model.Claims
	coupons  *coupon.Service
	goods    *goods.Service
}

// noSettings: no user has an email address or webhook URL.
type noSettings struct{}

func (noSettings) UserSettings(context.Context, int64) (model.Settings, error) {
	return model.Settings{}, nil
}

func newEnv(t *testing.T) *env {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	b.Tasks = asynq.NewClientFromRedisClient(r.Client)
	b.Queue = asynq.NewInspectorFromRedisClient(r.Client)
	clk := dbtest.NewClock(time.Now().UTC().Truncate(time.Minute).Add(time.Minute))
	b.Now = clk.Now
	e := &env{t: t, ctx: context.Background(), b: b, clk: clk,
		coupons: &coupon.Service{Backend: b, Settings: noSettings{}}, goods: goods.New(b)}
	e.merchant = model.Claims{UserID: e.user("shop"), Username: "shop", Role: model.RoleMerchant}
	return e
}

func (e *env) user(name string) int64 {
	e.t.Helper()
	var id int64
	err := e.b.SQL.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, '', ?, ?) RETURNING id`,
		name, model.RoleUser, e.clk.Now().UnixMilli()).Scan(&id)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// notes counts the user's inbox messages of kind about subject id.
func (e *env) notes(uid int64, kind string, id int64) int {
	e.t.Helper()
	var n int
	err := e.b.SQL.R.QueryRow(`SELECT COUNT(*) FROM notifications WHERE user_id = ? AND kind = ?
		AND (coupon_id = ? OR goods_id = ?)`, uid, kind, id, id).Scan(&n)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// scheduled reports whether the task ID waits in queue.
func (e *env) scheduled(queue, id string) bool {
	e.t.Helper()
	info, err := e.b.Queue.GetTaskInfo(queue, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return false
	} else if err != nil {
		e.t.Fatal(err)
	}
	return info.State == asynq.TaskStateScheduled || info.State == asynq.TaskStatePending
}

// subject is one area's side of the suite.
type subject struct {
	name  string
	kind  string // of its inbox messages
	queue string
	// create makes a subject starting at start and returns its ID.
	create func(e *env, start time.Time) int64
	// move moves its start (and with it the reminders).
	move func(e *env, id int64, start time.Time)
	// send runs the fan-out of (id, start, minutes) as its task would.
	send   func(e *env, id int64, start time.Time, minutes int) error
	taskID func(id int64, start time.Time, minutes int) string
	// ensure runs the periodic check that the fan-out tasks exist.
	ensure func(e *env) error

	book, cancel func(e *env, uid, id int64, minutes int, channel string) ([]model.BookedReminder, error)
	list         func(e *env, uid, id int64) ([]model.BookedReminder, error)
	mine         func(e *env, uid int64) ([]model.BookedReminder, error)
	idOf         func(r model.BookedReminder) int64
}

var subjects = []subject{
	{
		name: "coupon", kind: model.NotificationCouponReminder, queue: tasks.CouponRemindQueue,
		create: func(e *env, start time.Time) int64 {
			c, err := e.coupons.Create(e.ctx, e.merchant.UserID, model.CouponInput{Title: "Ten off", Kind: model.CouponAmountOff,
				Value: 1000, MinSpendCents: 5000, Stock: 10, LimitPerUser: 1, GrabStartAt: start, GrabEndAt: start.Add(time.Hour)})
			if err != nil {
				e.t.Fatal(err)
			}
			return c.ID
		},
		move: func(e *env, id int64, start time.Time) {
			if _, err := e.coupons.MoveWindow(e.ctx, e.merchant, id, start, start.Add(time.Hour)); err != nil {
				e.t.Fatal(err)
			}
		},
		send: func(e *env, id int64, start time.Time, minutes int) error {
			return e.coupons.SendReminders(e.ctx, tasks.CouponRemindPayload{CouponID: id, GrabStartAt: start, MinutesBefore: minutes})
		},
		taskID: func(id int64, start time.Time, minutes int) string {
			return tasks.CouponRemindTaskID(tasks.CouponRemindPayload{CouponID: id, GrabStartAt: start, MinutesBefore: minutes})
		},
		ensure: func(e *env) error { return e.coupons.EnsureReminderTasks(e.ctx) },
		book: func(e *env, uid, id int64, minutes int, channel string) ([]model.BookedReminder, error) {
			return e.coupons.Book(e.ctx, uid, id, minutes, channel)
		},
		cancel: func(e *env, uid, id int64, minutes int, channel string) ([]model.BookedReminder, error) {
			return e.coupons.Cancel(e.ctx, uid, id, minutes, channel)
		},
		list: func(e *env, uid, id int64) ([]model.BookedReminder, error) {
			return e.coupons.Reminders(e.ctx, uid, id)
		},
		mine: func(e *env, uid int64) ([]model.BookedReminder, error) { return e.coupons.UserReminders(e.ctx, uid) },
		idOf: func(r model.BookedReminder) int64 { return r.CouponID },
	},
	{
		name: "goods", kind: model.NotificationGoodsReminder, queue: tasks.GoodsRemindQueue,
		create: func(e *env, start time.Time) int64 {
			sl, err := e.goods.CreateSlot(e.ctx, e.merchant, goods.SlotInput{Title: "Noon", StartAt: start, EndAt: start.Add(time.Hour)})
			if err != nil {
				e.t.Fatal(err)
			}
			g, err := e.goods.Create(e.ctx, e.merchant, goods.Input{SlotID: sl.ID, Title: "Ten off", PriceCents: 10000,
				SeckillPriceCents: 4999, Stock: 10, LimitPerUser: 1})
			if err != nil {
				e.t.Fatal(err)
			}
			return g.ID
		},
		move: func(e *env, id int64, start time.Time) {
			g, err := e.goods.Get(e.ctx, id)
			if err != nil {
				e.t.Fatal(err)
			}
			if _, err := e.goods.UpdateSlot(e.ctx, e.merchant, g.SlotID, goods.SlotInput{Title: "Noon", StartAt: start, EndAt: start.Add(time.Hour)}); err != nil {
				e.t.Fatal(err)
			}
		},
		send: func(e *env, id int64, start time.Time, minutes int) error {
			return e.goods.SendReminders(e.ctx, tasks.GoodsRemindPayload{GoodsID: id, StartAt: start, MinutesBefore: minutes})
		},
		taskID: func(id int64, start time.Time, minutes int) string {
			return tasks.GoodsRemindTaskID(tasks.GoodsRemindPayload{GoodsID: id, StartAt: start, MinutesBefore: minutes})
		},
		ensure: func(e *env) error { return e.goods.EnsureReminderTasks(e.ctx) },
		book: func(e *env, uid, id int64, minutes int, channel string) ([]model.BookedReminder, error) {
			return e.goods.BookReminder(e.ctx, uid, id, minutes, channel)
		},
		cancel: func(e *env, uid, id int64, minutes int, channel string) ([]model.BookedReminder, error) {
			return e.goods.CancelReminder(e.ctx, uid, id, minutes, channel)
		},
		list: func(e *env, uid, id int64) ([]model.BookedReminder, error) { return e.goods.Reminders(e.ctx, uid, id) },
		mine: func(e *env, uid int64) ([]model.BookedReminder, error) { return e.goods.UserReminders(e.ctx, uid) },
		idOf: func(r model.BookedReminder) int64 { return r.GoodsID },
	},
}

// forEach runs one behaviour against every subject.
func forEach(t *testing.T, behaviour func(t *testing.T, e *env, s subject)) {
	for _, s := range subjects {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			behaviour(t, newEnv(t), s)
		})
	}
}

func pairs(rs []model.BookedReminder) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d/%s@%s", r.MinutesBefore, r.Channel, r.RemindAt.UTC().Format("15:04")))
	}
	return out
}

func at(start time.Time, minutes ...int) []string {
	out := []string{}
	for _, m := range minutes {
		out = append(out, fmt.Sprintf("%d/app@%s", m, start.Add(-time.Duration(m)*time.Minute).UTC().Format("15:04")))
	}
	return out
}

func want(t *testing.T, what string, rs []model.BookedReminder, err error, w []string) {
	t.Helper()
	if err != nil || !reflect.DeepEqual(pairs(rs), w) {
		t.Fatalf("%s = %v, %v; want %v", what, pairs(rs), err, w)
	}
}

func TestBookCancelList(t *testing.T) {
	forEach(t, func(t *testing.T, e *env, s subject) {
		start := e.clk.Now().Add(2 * time.Hour)
		id, uid, other := s.create(e, start), e.user("ann"), e.user("bob")

		rs, err := s.book(e, uid, id, 10, model.ChannelApp)
		want(t, "after booking 10", rs, err, at(start, 10))
		s.book(e, uid, id, 5, model.ChannelApp)
		rs, err = s.book(e, uid, id, 5, model.ChannelApp) // twice changes nothing
		want(t, "after booking 5 twice", rs, err, at(start, 5, 10))
		rs, err = s.list(e, uid, id)
		want(t, "list", rs, err, at(start, 5, 10))
		rs, err = s.list(e, other, id)
		want(t, "another user's list", rs, err, at(start))

		mine, err := s.mine(e, uid)
		want(t, "mine", mine, err, at(start, 10, 5)) // soonest first
		if s.idOf(mine[0]) != id || mine[0].Title != "Ten off" {
			t.Fatalf("mine names %+v, want %s %d titled Ten off", mine[0], s.name, id)
		}

		rs, err = s.cancel(e, uid, id, 5, model.ChannelApp)
		want(t, "after cancelling 5", rs, err, at(start, 10))
		rs, err = s.cancel(e, uid, id, 10, model.ChannelApp)
		want(t, "after cancelling 10", rs, err, at(start))
		rs, err = s.cancel(e, uid, id, 10, model.ChannelApp) // nothing left to cancel
		want(t, "cancelling again", rs, err, at(start))
		if mine, err := s.mine(e, uid); err != nil || len(mine) != 0 {
			t.Fatalf("mine after cancelling all = %v, %v", pairs(mine), err)
		}
	})
}

func TestBookRefuses(t *testing.T) {
	forEach(t, func(t *testing.T, e *env, s subject) {
		id, uid := s.create(e, e.clk.Now().Add(20*time.Minute)), e.user("ann")
		for _, bad := range []struct {
			id      int64
			minutes int
			channel string
			code    string
		}{
			{id, 0, "app", db.EINVALID}, {id, 7, "app", db.EINVALID}, {id, 65, "app", db.EINVALID}, {id, 5, "pigeon", db.EINVALID},
			{id, 20, "app", db.ETOOLATE}, {id, 30, "app", db.ETOOLATE},
			{id, 5, "sms", db.ENOTCONFIGURED}, {id, 5, "wechat", db.ENOTCONFIGURED}, {id, 5, "email", db.ENOTCONFIGURED},
			{id + 1000, 5, "app", db.ENOTFOUND},
		} {
			if _, err := s.book(e, uid, bad.id, bad.minutes, bad.channel); db.ErrorCode(err) != bad.code {
				t.Errorf("book %d %d/%s: %v, want %s", bad.id, bad.minutes, bad.channel, err, bad.code)
			}
		}
		if _, err := s.cancel(e, uid, id, 7, "app"); db.ErrorCode(err) != db.EINVALID {
			t.Errorf("cancel 7/app: %v, want invalid", err)
		}
		if _, err := s.list(e, uid, id+1000); db.ErrorCode(err) != db.ENOTFOUND {
			t.Errorf("list of a missing %s: %v, want not_found", s.name, err)
		}
		if rs, err := s.list(e, uid, id); err != nil || len(rs) != 0 {
			t.Fatalf("refused bookings left %v, %v", pairs(rs), err)
		}
	})
}

// Each booked reminder time has one task, due at that time; every booking
// of it is delivered once into the inbox however often the task runs, and
// a cancelled one not at all.
func TestFanOutDeliversOnce(t *testing.T) {
	forEach(t, func(t *testing.T, e *env, s subject) {
		start := e.clk.Now().Add(time.Hour)
		id := s.create(e, start)
		ann, bob, cat := e.user("ann"), e.user("bob"), e.user("cat")
		for _, uid := range []int64{ann, bob, cat} {
			if _, err := s.book(e, uid, id, 10, model.ChannelApp); err != nil {
				t.Fatal(err)
			}
		}
		s.book(e, ann, id, 30, model.ChannelApp)
		s.cancel(e, cat, id, 10, model.ChannelApp)
		for _, m := range []int{10, 30} {
			if !e.scheduled(s.queue, s.taskID(id, start, m)) {
				t.Fatalf("no task for %d minutes before", m)
			}
		}
		if e.scheduled(s.queue, s.taskID(id, start, 5)) {
			t.Fatal("a task for a lead time nobody booked")
		}
		e.clk.Set(start.Add(-10 * time.Minute))
		for range 3 { // Asynq delivers at least once
			if err := s.send(e, id, start, 10); err != nil {
				t.Fatal(err)
			}
		}
		for uid, n := range map[int64]int{ann: 1, bob: 1, cat: 0} {
			if got := e.notes(uid, s.kind, id); got != n {
				t.Errorf("user %d has %d reminders, want %d", uid, got, n)
			}
		}
		s.send(e, id, start, 30)
		if got := e.notes(ann, s.kind, id); got != 2 {
			t.Errorf("ann has %d reminders after the 30-minute one, want 2", got)
		}
	})
}

// Moving the start moves the bookings and their tasks: a task of the old
// start does nothing, the new one delivers.
func TestMovedStartMovesReminders(t *testing.T) {
	forEach(t, func(t *testing.T, e *env, s subject) {
		start := e.clk.Now().Add(time.Hour)
		id, uid := s.create(e, start), e.user("ann")
		if _, err := s.book(e, uid, id, 15, model.ChannelApp); err != nil {
			t.Fatal(err)
		}
		later := start.Add(30 * time.Minute)
		s.move(e, id, later)
		rs, err := s.list(e, uid, id)
		want(t, "after the move", rs, err, at(later, 15))
		mine, err := s.mine(e, uid)
		want(t, "mine after the move", mine, err, at(later, 15))
		if e.scheduled(s.queue, s.taskID(id, start, 15)) {
			t.Error("the old start's task is still scheduled")
		}
		if !e.scheduled(s.queue, s.taskID(id, later, 15)) {
			t.Error("no task for the new start")
		}
		e.clk.Set(start.Add(-15 * time.Minute))
		if err := s.send(e, id, start, 15); err != nil || e.notes(uid, s.kind, id) != 0 {
			t.Fatalf("the old start's task sent %d, %v", e.notes(uid, s.kind, id), err)
		}
		e.clk.Set(later.Add(-15 * time.Minute))
		if err := s.send(e, id, later, 15); err != nil || e.notes(uid, s.kind, id) != 1 {
			t.Fatalf("the new start's task sent %d, %v", e.notes(uid, s.kind, id), err)
		}
	})
}

// The periodic check brings back a fan-out task Redis lost.
func TestEnsureBringsLostTasksBack(t *testing.T) {
	forEach(t, func(t *testing.T, e *env, s subject) {
		start := e.clk.Now().Add(50 * time.Minute)
		id, uid := s.create(e, start), e.user("ann")
		if _, err := s.book(e, uid, id, 20, model.ChannelApp); err != nil {
			t.Fatal(err)
		}
		tid := s.taskID(id, start, 20)
		if err := e.b.Queue.DeleteTask(s.queue, tid); err != nil {
			t.Fatal(err)
		}
		if err := s.ensure(e); err != nil || !e.scheduled(s.queue, tid) {
			t.Fatalf("task %s after the check: scheduled %v, %v", tid, e.scheduled(s.queue, tid), err)
		}
	})
}

// Bookings racing a move of the start, all released at once: every booking
// ends at the new start, and the new start's task exists for the lead time
// booked, whichever committed first.
func TestBookRacingMove(t *testing.T) {
	forEach(t, func(t *testing.T, e *env, s subject) {
		start := e.clk.Now().Add(2 * time.Hour)
		id := s.create(e, start)
		const n = 40
		users := make([]int64, n)
		for i := range users {
			users[i] = e.user(fmt.Sprintf("u%d", i))
		}
		later := start.Add(20 * time.Minute)
		release := make(chan struct{})
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for _, uid := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-release
				_, err := s.book(e, uid, id, 25, model.ChannelApp)
				errs <- err
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			s.move(e, id, later)
		}()
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, uid := range users {
			mine, err := s.mine(e, uid)
			want(t, fmt.Sprintf("user %d's reminders", uid), mine, err, at(later, 25))
		}
		if !e.scheduled(s.queue, s.taskID(id, later, 25)) {
			t.Fatal("no task at the new start")
		}
	})
}

// A booking whose look-up read the start from before a move (the move and
// its reschedule ran in between) stores the new start and makes the new
// start's task itself: the reschedule found no booking to move.
func TestBookAfterAMoveSchedulesTheStoredStart(t *testing.T) {
	e := newEnv(t)
	s := subjects[1]
	start := e.clk.Now().Add(2 * time.Hour)
	id, uid := s.create(e, start), e.user("ann")
	later := start.Add(20 * time.Minute)
	s.move(e, id, later)
	st := &remind.Store{
		Backend: e.b,
		Table: remind.Table{Bookings: "goods_reminders", Deliveries: "goods_reminder_deliveries", Subject: "goods_id", Start: "start_ms",
			Source: "g.id, s.start_ms FROM goods g JOIN slots s ON s.id = g.slot_id WHERE g.id = ?"},
		Find: func(context.Context, int64) (remind.Subject, error) {
			return remind.Subject{ID: id, Start: start}, nil // read before the move
		},
		ChannelProblem: func(context.Context, int64, string) (string, error) { return "", nil },
		Task: func(id int64, start time.Time, minutes int) *asynq.Task {
			return tasks.NewGoodsRemindTask(tasks.GoodsRemindPayload{GoodsID: id, StartAt: start, MinutesBefore: minutes})
		},
		TaskID:    s.taskID,
		TaskQueue: s.queue,
	}
	rs, err := st.Book(e.ctx, uid, id, 25, model.ChannelApp)
	want(t, "booked", rs, err, at(later, 25))
	if !e.scheduled(s.queue, s.taskID(id, later, 25)) {
		t.Fatal("no task at the start stored")
	}
}
