package coupon_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

// BenchmarkReminderFanOut books 100,000 users on one template's 5-minute app
// reminder through the store, checks Asynq holds one task for it, then
// measures the fan-out: bookings notified per second (inbox rows written,
// deliveries recorded and live pushes published).
//
//	go test ./db/coupon/ -run XXX -bench ReminderFanOut -benchtime 3x
func BenchmarkReminderFanOut(b *testing.B) {
	const bookings = 100_000
	ctx := context.Background()
	cs := newService(b)
	now := time.Now()
	c := cs.create(b, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := cs.users(b, "bench", bookings)

	bookStart := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < bookings; i = next.Add(1) - 1 {
				if _, err := cs.Book(ctx, users[i], c.ID, 5, model.ChannelApp); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	bookRate := bookings / time.Since(bookStart).Seconds()
	if got := scheduledReminders(b, cs.Service); len(got) != 1 {
		b.Fatalf("%d reminder tasks for %d bookings of one lead time, want 1", len(got), bookings)
	}

	p := tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}
	var spent time.Duration
	runs := 0
	for b.Loop() {
		// Clear the previous run's deliveries so every run notifies everyone again.
		if _, err := cs.SQL.W.Exec(`DELETE FROM reminder_deliveries; DELETE FROM notifications`); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cs.SendReminders(ctx, p); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
		runs++
	}
	if n := cs.dbCount(b, `SELECT COUNT(*) FROM notifications`); n != bookings {
		b.Fatalf("%d notifications, want %d", n, bookings)
	}
	// Reported after the loop: b.Loop starts the measurement afresh.
	b.ReportMetric(bookRate, "bookings/s")
	b.ReportMetric(float64(len(scheduledReminders(b, cs.Service))), "tasks")
	b.ReportMetric(float64(bookings*runs)/spent.Seconds(), "notified/s")
}
