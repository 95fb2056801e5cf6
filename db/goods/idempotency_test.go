package goods_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

func TestIdempotentGoodsGrabAnswersTheFirstAnswer(t *testing.T) {
	eachShards(t, testIdempotentGoodsGrabAnswersTheFirstAnswer)
}

func testIdempotentGoodsGrabAnswersTheFirstAnswer(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.Goods(e.Slot(time.Minute, time.Hour), 5, 2)
	ctx := db.WithIdempotencyKey(e.Ctx, "retry-1")
	// Refused before the start: a retry with the same key after the start is refused the same way.
	_, err := e.S.Grab(ctx, 7, g.ID)
	wantCode(t, "before the start", err, db.ENOTSTARTED)
	e.Clk.Advance(2 * time.Minute)
	_, err = e.S.Grab(ctx, 7, g.ID)
	wantCode(t, "same key after the start", err, db.ENOTSTARTED)

	// A new key wins once; its retries get the same order and take no stock.
	ctx2 := db.WithIdempotencyKey(e.Ctx, "retry-2")
	first, err := e.S.Grab(ctx2, 7, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		again, err := e.S.Grab(ctx2, 7, g.ID)
		if err != nil || again.ID != first.ID || again.Status != model.OrderUnpaid {
			t.Fatalf("retry %d: %+v, %v; want order %d again", i, again, err, first.ID)
		}
	}
	if got := e.Remaining(g.ID); got != 4 {
		t.Fatalf("remaining %d after one keyed grab and its retries, want 4", got)
	}
	// The same key from another user is another request.
	other, err := e.S.Grab(db.WithIdempotencyKey(e.Ctx, "retry-2"), 8, g.ID)
	if err != nil || other.ID == first.ID {
		t.Fatalf("another user's grab under the same key: %+v, %v", other, err)
	}
}

func TestIdempotentGoodsGrabUnderConcurrentRetries(t *testing.T) {
	eachShards(t, testIdempotentGoodsGrabUnderConcurrentRetries)
}

func testIdempotentGoodsGrabUnderConcurrentRetries(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(100, 5)
	ctx := db.WithIdempotencyKey(e.Ctx, "burst")
	var start, done sync.WaitGroup
	var ids sync.Map
	var wins atomic.Int64
	start.Add(1)
	for i := 0; i < 200; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			o, err := e.S.Grab(ctx, 9, g.ID)
			if err == nil {
				wins.Add(1)
				ids.Store(o.ID, true)
			}
		}()
	}
	start.Done()
	done.Wait()
	n := 0
	ids.Range(func(any, any) bool { n++; return true })
	if wins.Load() != 200 || n != 1 || e.Remaining(g.ID) != 99 {
		t.Fatalf("200 retries of one keyed grab: %d answered, %d distinct orders, remaining %d; want 200, 1, 99", wins.Load(), n, e.Remaining(g.ID))
	}
	e.CheckBalance(g.ID, "after the retries")
}

func TestIdempotentPayAndCancel(t *testing.T) { eachShards(t, testIdempotentPayAndCancel) }

func testIdempotentPayAndCancel(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(5, 1)
	o := e.Grab(3, g.ID)
	cancelCtx := db.WithIdempotencyKey(e.Ctx, "cancel-1")
	c1, err := e.S.CancelOrder(cancelCtx, 3, o.ID)
	if err != nil || c1.Status != model.OrderCancelled {
		t.Fatalf("cancel: %+v, %v", c1, err)
	}
	c2, err := e.S.CancelOrder(cancelCtx, 3, o.ID)
	if err != nil || c2.Status != model.OrderCancelled || c2.Version != c1.Version {
		t.Fatalf("cancel retried: %+v, %v; want the first answer", c2, err)
	}
	// A pay refused as expired stays refused under its key.
	payCtx := db.WithIdempotencyKey(e.Ctx, "pay-1")
	_, err = e.S.PayOrder(payCtx, 3, o.ID)
	wantCode(t, "pay a cancelled order", err, db.EEXPIRED)
	_, err = e.S.PayOrder(payCtx, 3, o.ID)
	wantCode(t, "pay retried", err, db.EEXPIRED)
	e.CheckBalance(g.ID, "after cancel and pay retries")

	o2 := e.Grab(4, g.ID)
	payCtx2 := db.WithIdempotencyKey(e.Ctx, "pay-2")
	p1, err := e.S.PayOrder(payCtx2, 4, o2.ID)
	if err != nil || p1.Status != model.OrderPaid {
		t.Fatalf("pay: %+v, %v", p1, err)
	}
	p2, err := e.S.PayOrder(payCtx2, 4, o2.ID)
	if err != nil || p2.Status != model.OrderPaid || p2.Version != p1.Version {
		t.Fatalf("pay retried: %+v, %v", p2, err)
	}
	if st := e.Stats(g.ID); st.Paid != 1 {
		t.Fatalf("paid %d, want 1", st.Paid)
	}
}
