package orders_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/orders"
	"github.com/seckill/seckill/db/model"
)

// An order acknowledged and then lost with a Redis node (no WAIT: the
// replica never had it) is found among the orders this process
// acknowledged, recorded as failed (sold_twice: nothing was charged) and
// told to its shopper live and in the inbox. Orders Redis still holds, and
// orders the store holds though Redis lost them, are left alone.
func TestPhantomWinsFoundAndTold(t *testing.T) {
	e := goodstest.New(t)
	g := e.LiveGoods(20, 1)
	users := make([]int64, 4)
	for i := range users {
		if err := e.S.SQL.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, '', 'user', 0) RETURNING id`,
			"shopper"+string(rune('a'+i))).Scan(&users[i]); err != nil {
			t.Fatal(err)
		}
	}
	kept, flushed := e.Grab(users[0], g.ID), e.Grab(users[1], g.ID)
	e.Flush() // both in the store now
	lost := e.Grab(users[2], g.ID)
	stays := e.Grab(users[3], g.ID)                          // in Redis, not flushed yet
	if err := e.S.LoseOrder(e.Ctx, flushed.ID); err != nil { // Redis lost it; the store has it
		t.Fatal(err)
	}
	if err := e.S.LoseOrder(e.Ctx, lost.ID); err != nil { // Redis lost it before any flush
		t.Fatal(err)
	}
	events := e.WatchUser(users[2])
	n, err := e.S.FindPhantoms(e.Ctx, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("FindPhantoms: %d lost, %v; want the one order neither Redis nor the store holds", n, err)
	}
	events.WaitOrder(t, lost.ID, func(o *model.Order) bool {
		return o.Status == model.OrderFailed && o.Failure == model.FailureSoldTwice
	})
	var status, failure string
	var uid int64
	if err := e.S.SQL.R.QueryRow(`SELECT status, failure, user_id FROM orders WHERE id = ?`, lost.ID).Scan(&status, &failure, &uid); err != nil {
		t.Fatalf("the lost order is not in the store: %v", err)
	}
	if status != model.OrderFailed || failure != model.FailureSoldTwice || uid != users[2] {
		t.Fatalf("the lost order is stored %s/%s for user %d, want failed/sold_twice for %d", status, failure, uid, users[2])
	}
	var kind, msg string
	if err := e.S.SQL.R.QueryRow(`SELECT kind, message FROM notifications WHERE user_id = ?`, users[2]).Scan(&kind, &msg); err != nil {
		t.Fatalf("the shopper's inbox has nothing: %v", err)
	}
	if kind != orders.NotificationOrderFailed || !strings.Contains(msg, "#"+model.OrderNumber(lost.ID)) || !strings.Contains(msg, "Nothing was charged") {
		t.Fatalf("inbox: %s %q", kind, msg)
	}
	var others int
	e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM notifications WHERE user_id <> ?`, users[2]).Scan(&others)
	if others != 0 {
		t.Fatalf("%d notifications to shoppers whose orders were kept", others)
	}
	for _, o := range []*model.Order{kept, flushed} {
		if err := e.S.SQL.R.QueryRow(`SELECT status FROM orders WHERE id = ?`, o.ID).Scan(&status); err != nil || status != model.OrderUnpaid {
			t.Fatalf("order %d: %s, %v; want it kept unpaid", o.ID, status, err)
		}
	}
	if n, err := e.S.FindPhantoms(e.Ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("a second look failed %d more (%v): each lost order is told once", n, err)
	}
	if got := e.S.PhantomsFound(); got != 1 {
		t.Fatalf("PhantomsFound = %d, want 1 (the lost order, counted once)", got)
	}
	var stored int
	e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM orders WHERE id = ?`, stays.ID).Scan(&stored)
	if stored != 0 {
		t.Fatalf("order %d, which Redis holds, was written to the store by the check", stays.ID)
	}
	e.Flush()
	if st := e.Stats(g.ID); st.Failed != 1 || st.DB.Failed != 1 {
		t.Fatalf("failed orders: %d live, %d recorded; want the lost one in both, so the stock check agrees", st.Failed, st.DB.Failed)
	}
}
