package fair_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// A priority code admits the shopper who brings it at once, once: a used,
// unknown or another goods' code is conflict, and of twenty shoppers racing
// with one code one is admitted. A bad count is invalid.
func TestQueuePriorityCodes(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute)
	other := e.queueGoods(10, 1, time.Minute)
	for _, n := range []int{0, -1, 1001} {
		_, err := e.F.QueueCodes(e.Ctx, e.Merchant, g.ID, n, "")
		wantCode(t, "count", err, db.EINVALID)
	}
	codes, err := e.F.QueueCodes(e.Ctx, e.Merchant, g.ID, 3, "the press")
	if err != nil || len(codes) != 3 || codes[0] == codes[1] {
		t.Fatalf("codes %v %v", codes, err)
	}
	otherCodes, err := e.F.QueueCodes(e.Ctx, e.Merchant, other.ID, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	for u := int64(1); u <= 5; u++ {
		e.join(u, g.ID)
	}
	e.Clk.Advance(time.Minute) // the start: nobody admitted by the rate yet
	tk, err := e.F.JoinQueueCode(e.Ctx, 9, g.ID, codes[0])
	if err != nil || tk.State != model.TicketAdmitted || tk.Admission == "" {
		t.Fatalf("join with a code: %+v %v, want admitted at once", tk, err)
	}
	if got := e.ticket(9, g.ID); got.State != model.TicketAdmitted || got.Admission != tk.Admission {
		t.Fatalf("the ticket looked up: %+v, want the admission %s", got, tk.Admission)
	}
	if _, err := e.GrabWith(9, g.ID, goods.Pass{Admission: tk.Admission}); err != nil {
		t.Fatalf("grab with the code's admission: %v", err)
	}
	for name, c := range map[string]string{"used": codes[0], "unknown": "AAAAAAAAAAAAAAAA", "another goods'": otherCodes[0], "empty": ""} {
		_, err := e.F.JoinQueueCode(e.Ctx, 10, g.ID, c)
		wantCode(t, name, err, db.ECONFLICT)
	}
	// One waiting in line is admitted by a code too.
	if tk, err := e.F.JoinQueueCode(e.Ctx, 3, g.ID, codes[1]); err != nil || tk.State != model.TicketAdmitted {
		t.Fatalf("a waiting shopper with a code: %+v %v", tk, err)
	}
	var won atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for u := int64(100); u < 120; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := e.F.JoinQueueCode(e.Ctx, u, g.ID, codes[2])
			switch db.ErrorCode(err) {
			case "":
				won.Add(1)
			case db.ECONFLICT:
			default:
				t.Errorf("user %d: %v", u, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d shoppers were admitted with one code, want 1", won.Load())
	}
	// Unused past its time, the code's admission reads closed; joining again goes to the back.
	e.Clk.Advance(61 * time.Second)
	if tk := e.ticket(3, g.ID); tk.State != model.TicketClosed {
		t.Fatalf("a code's admission unused past its time: %+v", tk)
	}
	if tk := e.join(3, g.ID); tk.State != model.TicketWaiting {
		t.Fatalf("joined again: %+v", tk)
	}
}
