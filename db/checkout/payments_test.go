package checkout_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

func (e *env) callback(orderID, paid int64, ref string) []byte {
	b, _ := json.Marshal(tasks.PaymentPayload{OrderID: orderID, PaidCents: paid, GatewayRef: ref})
	return b
}

func (e *env) payments(ref string) (n int, outcome, reason string) {
	e.t.Helper()
	e.b.SQL.R.QueryRow(`SELECT COUNT(*), COALESCE(MAX(outcome), ''), COALESCE(MAX(reason), '') FROM payments WHERE gateway_ref = ?`, ref).
		Scan(&n, &outcome, &reason)
	return
}

// The callback needs the body's signature under the payment secret and a
// well-formed body; a refused one records and enqueues nothing.
func TestAcceptCallbackSignature(t *testing.T) { eachShards(t, testAcceptCallbackSignature) }

func testAcceptCallbackSignature(t *testing.T, k int) {
	e := newEnvK(t, k)
	body := e.callback(1_000_000_001, 4999, "ref-1")
	wantCode(t, "no signature", e.s.AcceptCallback(e.ctx, body, ""), db.EUNAUTHORIZED)
	wantCode(t, "a signature under another key", e.s.AcceptCallback(e.ctx, body, checkout.Sign([]byte("other"), body)), db.EUNAUTHORIZED)
	wantCode(t, "a signature of another body", e.s.AcceptCallback(e.ctx, body, checkout.Sign(e.s.PaymentSecret, body[1:])), db.EUNAUTHORIZED)
	for _, bad := range []string{`{`, `{"order_id":0,"paid_cents":1,"gateway_ref":"x"}`, `{"order_id":1,"paid_cents":1,"gateway_ref":""}`,
		`{"order_id":1,"paid_cents":-1,"gateway_ref":"x"}`, `{"order_id":"1","paid_cents":1,"gateway_ref":"x"}`} {
		wantCode(t, bad, e.s.AcceptCallback(e.ctx, []byte(bad), checkout.Sign(e.s.PaymentSecret, []byte(bad))), db.EINVALID)
	}
	if n, _, _ := e.payments("ref-1"); n != 0 {
		t.Fatalf("%d payments recorded from refused callbacks", n)
	}
}

// The same callback 50 times at once records one payment and one task; the
// task settles it once however often it runs, and writes its outcome.
func TestCallbackReplay(t *testing.T) { eachShards(t, testCallbackReplay) }

func testCallbackReplay(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	o := e.grab(u, e.liveGoods(2, 1, 4999).ID)
	body := e.callback(o.ID, 4999, "gw-42")
	sig := checkout.Sign(e.s.PaymentSecret, body)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; errs <- e.s.AcceptCallback(e.ctx, body, sig) }()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, outcome, _ := e.payments("gw-42"); n != 1 || outcome != checkout.OutcomePending {
		t.Fatalf("%d payments (%s), want one pending", n, outcome)
	}
	info, err := e.b.Queue.GetTaskInfo(tasks.QueueCritical, tasks.PaymentTaskID("gw-42"))
	if err != nil || info.Type != tasks.TypePaymentSettle {
		t.Fatalf("settle task %+v, %v", info, err)
	}
	if q, _ := e.b.Queue.GetQueueInfo(tasks.QueueCritical); q.Pending != 1 {
		t.Fatalf("%d pending tasks, want 1", q.Pending)
	}
	// Run the handler twice (and twice more at once): paid once.
	mux := asynq.NewServeMux()
	(&tasks.Checkout{Store: e.s}).Register(mux)
	task := asynq.NewTask(tasks.TypePaymentSettle, info.Payload)
	for range 2 {
		if err := mux.ProcessTask(e.ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	var wg2 sync.WaitGroup
	for range 2 {
		wg2.Add(1)
		go func() { defer wg2.Done(); mux.ProcessTask(e.ctx, task) }()
	}
	wg2.Wait()
	got, err := e.g.Order(e.ctx, u, o.ID)
	if err != nil || got.Status != model.OrderPaid || got.Version != o.Version+1 || got.PaidCents != 4999 {
		t.Fatalf("order %+v, %v; want paid once (version %d)", got, err, o.Version+1)
	}
	if _, outcome, _ := e.payments("gw-42"); outcome != checkout.OutcomePaid {
		t.Fatalf("payment %s, want paid", outcome)
	}
	// A replay long after (the task gone) changes nothing and enqueues nothing.
	if err := e.b.Queue.DeleteTask(tasks.QueueCritical, tasks.PaymentTaskID("gw-42")); err != nil {
		t.Fatal(err)
	}
	if err := e.s.AcceptCallback(e.ctx, body, sig); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Queue.GetTaskInfo(tasks.QueueCritical, tasks.PaymentTaskID("gw-42")); err == nil {
		t.Fatal("a replay of a settled payment enqueued a task")
	}
}

// Pay's race rules: an expired or cancelled order is refunded, not paid; so
// is a second payment of a paid order, a payment of the wrong amount and one
// for no order.
func TestSettleRefunds(t *testing.T) { eachShards(t, testSettleRefunds) }

func testSettleRefunds(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	g := e.liveGoods(5, 5, 4999)
	expired, cancelled, paid, wrong := e.grab(u, g.ID), e.grab(u, g.ID), e.grab(u, g.ID), e.grab(u, g.ID)
	if _, err := e.g.CancelOrder(e.ctx, u, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Pay(e.ctx, u, paid.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(15*time.Minute + time.Second) // expired is past its deadline; its expiry task has not run
	// cancelled and paid were decided before; wrong is past its deadline too, but its amount is checked first.
	for i, c := range []struct {
		order           int64
		paid            int64
		outcome, reason string
	}{
		{expired.ID, 4999, checkout.OutcomeRefunded, model.OrderExpired},
		{cancelled.ID, 4999, checkout.OutcomeRefunded, model.OrderCancelled},
		{paid.ID, 4999, checkout.OutcomeRefunded, checkout.RefundAlreadyPaid},
		{wrong.ID, 100, checkout.OutcomeRefunded, checkout.RefundAmount},
		{g.ID*1_000_000_000 + 99, 4999, checkout.OutcomeRefunded, checkout.RefundNotFound},
	} {
		ref := fmt.Sprintf("r%d", i)
		body := e.callback(c.order, c.paid, ref)
		if err := e.s.AcceptCallback(e.ctx, body, checkout.Sign(e.s.PaymentSecret, body)); err != nil {
			t.Fatal(err)
		}
		out, err := e.s.SettlePayment(e.ctx, tasks.PaymentPayload{GatewayRef: ref, OrderID: c.order, PaidCents: c.paid})
		if err != nil || out.Outcome != c.outcome || out.Reason != c.reason {
			t.Errorf("settle %d = %+v, %v; want %s %s", i, out, err, c.outcome, c.reason)
		}
	}
	if o, _ := e.g.Order(e.ctx, u, expired.ID); o.Status != model.OrderExpired {
		t.Fatalf("the refunded payment left the order %s", o.Status)
	}
}
