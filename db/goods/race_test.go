package goods_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// 1,000 distinct users released at once on stock 100: exactly 100 orders,
// no user twice, every unit sold once, remaining 0.
func TestGrabRaceDistinctUsers(t *testing.T) { eachShards(t, testGrabRaceDistinctUsers) }

func testGrabRaceDistinctUsers(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(100, 1)
	const users = 1000
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	orders := map[int64]*model.Order{}
	var soldOut, other atomic.Int64
	for u := int64(1); u <= users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o, err := e.S.Grab(e.Ctx, u, g.ID)
			switch db.ErrorCode(err) {
			case "":
				mu.Lock()
				orders[o.ID] = o
				mu.Unlock()
			case db.ESOLDOUT:
				soldOut.Add(1)
			default:
				other.Add(1)
				t.Errorf("user %d: %v", u, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(orders) != 100 || soldOut.Load() != users-100 || other.Load() != 0 {
		t.Fatalf("%d orders, %d sold out, %d other errors; want 100, 900, 0", len(orders), soldOut.Load(), other.Load())
	}
	byUser, byUnit := map[int64]bool{}, map[int64]bool{}
	for _, o := range orders {
		if byUser[o.UserID] || byUnit[o.Unit] || o.Unit < 1 || o.Unit > 100 {
			t.Fatalf("order %+v repeats a user or unit, or has a unit outside 1..100", o)
		}
		byUser[o.UserID], byUnit[o.Unit] = true, true
	}
	if left := e.Remaining(g.ID); left != 0 {
		t.Fatalf("remaining %d, want 0", left)
	}
	e.Flush()
	st := e.Stats(g.ID)
	if st.Unpaid != 100 || st.DB.Unpaid != 100 || len(st.Drift) != 1 || st.Drift[0] != "remaining" {
		// remaining differs only until the stock sync runs
		t.Fatalf("stats after flush: %+v", st)
	}
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(g.ID); len(st.Drift) != 0 || st.DB.Stock != 0 {
		t.Fatalf("stats after sync: drift %v, db stock %d", st.Drift, st.DB.Stock)
	}
}

// One user firing 50 grabs at once gets exactly limit orders.
func TestGrabRaceOneUser(t *testing.T) {
	for _, limit := range []int64{1, 3, 7} {
		e := newGoodsEnv(t)
		g := e.LiveGoods(100, limit)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var ok, limited atomic.Int64
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.S.Grab(e.Ctx, 42, g.ID)
				switch db.ErrorCode(err) {
				case "":
					ok.Add(1)
				case db.ELIMITREACHED:
					limited.Add(1)
				default:
					t.Errorf("grab: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if ok.Load() != limit || limited.Load() != 50-limit {
			t.Fatalf("limit %d: %d orders and %d refused, want %d and %d", limit, ok.Load(), limited.Load(), limit, 50-limit)
		}
		if left := e.Remaining(g.ID); left != 100-limit {
			t.Fatalf("limit %d: remaining %d, want %d", limit, left, 100-limit)
		}
	}
}

// Pay and expire released together, 200 rounds: exactly one wins each round
// and remaining + unpaid + paid == stock after every round.
func TestPayVersusExpire(t *testing.T) { eachShards(t, testPayVersusExpire) }

func testPayVersusExpire(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	const rounds = 200
	g := e.LiveGoods(rounds, 1)
	expirer, _ := e.Twin()
	var paidWins, expireWins int
	for r := int64(1); r <= rounds; r++ {
		o := e.Grab(r, g.ID)
		before, after := o.ExpiresAt.Add(-1), o.ExpiresAt // pay just in time; expire just due
		start := make(chan struct{})
		var wg sync.WaitGroup
		var payErr, expErr error
		wg.Add(2)
		go func() { defer wg.Done(); <-start; _, payErr = e.S.PayAt(e.Ctx, r, o.ID, before) }()
		go func() { defer wg.Done(); <-start; expErr = expirer.ExpireAt(e.Ctx, o.ID, after) }()
		close(start)
		wg.Wait()
		if expErr != nil {
			t.Fatalf("round %d: expire: %v", r, expErr)
		}
		got, err := e.S.Order(e.Ctx, r, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case payErr == nil && got.Status == model.OrderPaid:
			paidWins++
		case db.ErrorCode(payErr) == db.EEXPIRED && got.Status == model.OrderExpired:
			expireWins++
		default:
			t.Fatalf("round %d: pay %v, final status %q: not exactly one winner", r, payErr, got.Status)
		}
		e.CheckBalance(g.ID, "round")
	}
	t.Logf("pay won %d rounds, expire won %d", paidWins, expireWins)
	e.Flush()
	st := e.Stats(g.ID)
	if st.Paid != int64(paidWins) || st.Expired != int64(expireWins) || st.DB.Paid != st.Paid || st.DB.Expired != st.Expired || st.Unpaid != 0 {
		t.Fatalf("stats %+v, want %d paid and %d expired on both sides", st, paidWins, expireWins)
	}
	if st.RevenueCents != int64(paidWins)*4999 || st.DB.RevenueCents != st.RevenueCents {
		t.Fatalf("revenue %d / db %d, want %d", st.RevenueCents, st.DB.RevenueCents, int64(paidWins)*4999)
	}
}

// Hundreds of grabs released at once on goods of one and of three buckets,
// 100 users with a limit of 2 grabbing 5 times each: the grabs of a bucket
// share batch calls (sale/engine.go), and still the stock is sold exactly
// once, no user holds more than the limit, the units are unique, each
// refusal is the right one, and after the flush every order a grab was
// answered with is in the store as answered.
func TestGrabRaceBatched(t *testing.T) { eachShards(t, testGrabRaceBatched) }

func testGrabRaceBatched(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	const users, tries, limit, stock = 100, 5, 2, 150
	g := e.LiveGoods(stock, limit)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	orders := map[int64]*model.Order{}
	perUser := map[int64]int64{}
	var soldOut, limited atomic.Int64
	for i := 0; i < users*tries; i++ {
		u := int64(i%users + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o, err := e.S.Grab(e.Ctx, u, g.ID)
			switch db.ErrorCode(err) {
			case "":
				mu.Lock()
				orders[o.ID] = o
				perUser[u]++
				mu.Unlock()
			case db.ESOLDOUT:
				soldOut.Add(1)
			case db.ELIMITREACHED:
				limited.Add(1)
			default:
				t.Errorf("user %d: %v", u, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	calls, grabs := e.S.GrabBatches()
	t.Logf("%d grabs in %d batch calls", grabs, calls)
	if grabs != users*tries || calls >= grabs {
		t.Fatalf("%d grabs went through %d batch calls: want all %d, fewer calls than grabs", grabs, calls, users*tries)
	}
	// Every try of a user is answered: a win, at the limit, or sold out.
	if int64(len(orders))+soldOut.Load()+limited.Load() != users*tries {
		t.Fatalf("%d orders + %d sold out + %d limited != %d grabs", len(orders), soldOut.Load(), limited.Load(), users*tries)
	}
	// A unit a refused grab brought to another bucket as the burst ended
	// may still be on sale (this process heard sold out, and hears "back"
	// a moment later): it is never lost, and the next shoppers get it. A
	// process with no memory of the sale sells what is left.
	if len(orders) < stock {
		t.Logf("%d of %d units still on sale after the burst", stock-len(orders), stock)
		if left := e.Remaining(g.ID); left != int64(stock-len(orders)) {
			t.Fatalf("%d orders and %d remaining, want %d in all (%d sold out, %d at the limit)", len(orders), left, stock, soldOut.Load(), limited.Load())
		}
		fresh := goods.New(e.S.Backend)
		fresh.OrderTTL = e.S.OrderTTL
		for u := int64(users + 1); len(orders) < stock && u <= 2*users; u++ {
			o, err := fresh.Grab(e.Ctx, u, g.ID)
			if err != nil {
				t.Fatalf("user %d after the burst, %d of %d sold: %v", u, len(orders), stock, err)
			}
			orders[o.ID] = o
		}
	}
	if len(orders) != stock {
		t.Fatalf("%d orders, want %d (%d sold out, %d at the limit)", len(orders), stock, soldOut.Load(), limited.Load())
	}
	byUnit := map[int64]bool{}
	for _, o := range orders {
		if byUnit[o.Unit] || o.Unit < 1 || o.Unit > stock {
			t.Fatalf("order %+v repeats a unit or has one outside 1..%d", o, stock)
		}
		byUnit[o.Unit] = true
	}
	for u, n := range perUser {
		if n > limit {
			t.Fatalf("user %d holds %d orders, limit %d", u, n, limit)
		}
	}
	if left := e.Remaining(g.ID); left != 0 {
		t.Fatalf("remaining %d, want 0", left)
	}
	e.CheckBalance(g.ID, "after the race")
	e.Flush()
	for id, o := range orders {
		got, err := e.S.SQLOrder(e.Ctx, id)
		if err != nil {
			t.Fatalf("order %d not in the store: %v", id, err)
		}
		if got.UserID != o.UserID || got.Unit != o.Unit || got.Status != o.Status || got.AmountCents != o.AmountCents ||
			!got.CreatedAt.Equal(o.CreatedAt) || !got.ExpiresAt.Equal(o.ExpiresAt) {
			t.Fatalf("order %d in the store %+v, answered %+v", id, got, o)
		}
	}
	if st := e.Stats(g.ID); st.Unpaid != stock || st.DB.Unpaid != stock {
		t.Fatalf("stats after flush: %+v", st)
	}
}
