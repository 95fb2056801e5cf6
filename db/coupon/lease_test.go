package coupon_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/tasks"
)

// leaseEnv is a service on a settable clock whose users book a webhook
// reminder, at 5 minutes, of a template opening in two hours.
type leaseEnv struct {
	*testService
	clk   *dbtest.Clock
	c     *model.Coupon
	p     tasks.CouponRemindPayload
	users []int64
}

func newLeaseEnv(t *testing.T, urls ...string) *leaseEnv {
	t.Helper()
	cs := newService(t)
	cs.WebhookAllowPrivate = true
	clk := dbtest.NewClock(time.Now())
	cs.Now = clk.Now
	c := cs.create(t, 10, 1, clk.Now().Add(2*time.Hour), clk.Now().Add(3*time.Hour))
	e := &leaseEnv{testService: cs, clk: clk, c: c, users: bookWebhooks(t, cs, c, urls),
		p: tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}}
	return e
}

func (e *leaseEnv) sweep(t *testing.T) {
	t.Helper()
	if err := e.SweepDeliveries(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The lease outlasts the slowest send, and a sender starts with room to finish.
func TestDeliveryLeaseOutlastsSends(t *testing.T) {
	slowest := max(outbound.SMTPTimeout, outbound.WebhookTimeout)
	if coupon.SendBudget <= slowest || coupon.DeliveryLease < 2*coupon.SendBudget {
		t.Fatalf("lease %s, send budget %s, slowest send %s: a live worker could lose its delivery", coupon.DeliveryLease, coupon.SendBudget, slowest)
	}
}

// A worker that claimed a webhook reminder and died before sending it leaves
// the delivery pending. Running the fan-out again does not send it (its row
// exists), nor does the sweep while the lease runs; once the lease is over
// the sweep sends it, once.
func TestDeliveryLeaseResendsAfterWorkerDied(t *testing.T) {
	ctx := context.Background()
	srv, hits := countingServer(t)
	e := newLeaseEnv(t, srv.URL+"/hook")
	if n, _, err := e.ClaimExternal(ctx, e.p, model.ChannelWebhook, e.users); err != nil || n != 1 {
		t.Fatalf("claim: %d %v", n, err) // ... and the worker dies
	}
	if err := e.SendReminders(ctx, e.p); err != nil { // Asynq runs the fan-out again
		t.Fatal(err)
	}
	e.clk.Advance(coupon.DeliveryLease - time.Millisecond)
	e.sweep(t)
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests while the dead worker's lease ran, want 0", n)
	}
	if status, attempts, _ := deliveryOf(t, e.testService, e.c, e.users[0]); status != "pending" || attempts != 1 {
		t.Fatalf("inside the lease: %s after %d attempts, want pending after 1", status, attempts)
	}

	e.clk.Advance(time.Millisecond)
	e.sweep(t)
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests once the lease ran out, want 1", n)
	}
	if status, attempts, lastErr := deliveryOf(t, e.testService, e.c, e.users[0]); status != "sent" || attempts != 2 {
		t.Fatalf("after the sweep: %s after %d attempts (%s), want sent after 2", status, attempts, lastErr)
	}
	e.clk.Advance(2 * coupon.DeliveryLease)
	e.sweep(t)
	e.SendReminders(ctx, e.p)
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests after the delivery was sent, want 1", n)
	}
}

// Once a sweep has taken an expired delivery over it holds a new lease while
// it sends: another sweep then, or any time inside that lease, leaves the
// delivery to it, so the endpoint gets one request.
func TestDeliveryLeaseOneSenderPerLease(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			close(entered)
			<-release // the first sender is alive, in the middle of its send
		}
	}))
	t.Cleanup(srv.Close)
	e := newLeaseEnv(t, srv.URL+"/hook")
	if _, _, err := e.ClaimExternal(ctx, e.p, model.ChannelWebhook, e.users); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(coupon.DeliveryLease)
	first := make(chan error, 1)
	go func() { first <- e.SweepDeliveries(ctx) }()
	select {
	case <-entered:
	case err := <-first:
		t.Fatalf("the sweep ended (%v) without sending the expired delivery", err)
	}
	e.sweep(t) // a second worker's sweep at the same moment
	e.clk.Advance(coupon.DeliveryLease - time.Millisecond)
	e.sweep(t) // and one at the end of the first sweep's lease
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests, want 1: a live sender's delivery was sent again", n)
	}
	if status, attempts, _ := deliveryOf(t, e.testService, e.c, e.users[0]); status != "sent" || attempts != 2 {
		t.Fatalf("%s after %d attempts, want sent after 2", status, attempts)
	}
}

// A worker that waited for a sender slot (a page of slow endpoints ahead of
// it) renews its lease before it sends when less than a send's budget is
// left, so a sweep during its send leaves the delivery to it; a worker that
// waited past its lease finds the delivery taken over and sends nothing.
func TestDeliveryLeaseSlowWorker(t *testing.T) {
	ctx := context.Background()
	var hits, hitsA atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/a" && hitsA.Add(1) == 1 {
			close(entered)
			<-release
		}
	}))
	t.Cleanup(srv.Close)
	e := newLeaseEnv(t, srv.URL+"/a", srv.URL+"/b")
	_, sendA, err := e.ClaimExternal(ctx, e.p, model.ChannelWebhook, e.users[:1])
	if err != nil {
		t.Fatal(err)
	}
	_, sendB, err := e.ClaimExternal(ctx, e.p, model.ChannelWebhook, e.users[1:])
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(coupon.DeliveryLease - coupon.SendBudget + time.Millisecond)
	doneA := make(chan error, 1)
	go func() { doneA <- sendA() }() // A's slot comes with less than a budget left
	select {
	case <-entered:
	case err := <-doneA:
		t.Fatalf("A's worker ended (%v) without sending", err)
	}
	e.clk.Advance(coupon.SendBudget)
	e.sweep(t) // A's first lease and B's are over; A is still sending
	close(release)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if n, a := hits.Load(), hitsA.Load(); n != 2 || a != 1 {
		t.Fatalf("%d requests, %d of them to A; want A's own and the sweep's for B", n, a)
	}
	if err := sendB(); err != nil { // B's slot comes after its lease ran out
		t.Fatal(err)
	}
	if n := hits.Load(); n != 2 {
		t.Fatalf("%d requests, want 2: B's late worker sent what the sweep had sent", n)
	}
	for i, want := range []int{1, 2} {
		if status, attempts, _ := deliveryOf(t, e.testService, e.c, e.users[i]); status != "sent" || attempts != want {
			t.Fatalf("user %d: %s after %d attempts, want sent after %d", i, status, attempts, want)
		}
	}
}

// A failed attempt waits for its retry task; if the task never runs (Redis
// lost it), the sweep makes the retry once the task's lease is over, and the
// task turning up late after all sends nothing.
func TestDeliveryLeaseCoversLostRetry(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	e := newLeaseEnv(t, srv.URL+"/hook")
	e.RetryDelay = time.Minute
	if err := e.SendReminders(ctx, e.p); err != nil {
		t.Fatal(err)
	}
	if status, attempts, _ := deliveryOf(t, e.testService, e.c, e.users[0]); status != "retrying" || attempts != 1 {
		t.Fatalf("after a 503: %s after %d attempts, want retrying after 1", status, attempts)
	}
	e.clk.Advance(time.Minute) // the task is due, but no worker runs it
	e.sweep(t)
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests while the retry task held the delivery, want 1", n)
	}
	e.clk.Advance(coupon.DeliveryLease)
	e.sweep(t)
	if status, attempts, _ := deliveryOf(t, e.testService, e.c, e.users[0]); status != "sent" || attempts != 2 || hits.Load() != 2 {
		t.Fatalf("after the sweep: %s after %d attempts, %d requests; want sent after 2, 2 requests", status, attempts, hits.Load())
	}
	late := tasks.CouponDeliverPayload{CouponID: e.c.ID, GrabStartAt: e.c.GrabStartAt, MinutesBefore: 5, Channel: model.ChannelWebhook, UserID: e.users[0], Attempt: 1}
	if err := e.RetryDelivery(ctx, late); err != nil || hits.Load() != 2 {
		t.Fatalf("the lost task turning up: %v, %d requests; want nothing sent", err, hits.Load())
	}
}
