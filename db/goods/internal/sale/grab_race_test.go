package sale_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Hundreds of grabs released at once on goods of one and of three buckets,
// 100 users with a limit of 2 grabbing 5 times each: the grabs of a bucket
// share batch calls (sale/engine.go), and still the stock is sold exactly
// once, no user holds more than the limit, the units are unique, each
// refusal is the right one, and after the flush every order a grab was
// answered with is in the store as answered.
func TestGrabRaceBatched(t *testing.T) { goodstest.EachShards(t, testGrabRaceBatched) }

func testGrabRaceBatched(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
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
		var user, unit, amount, created, expires int64
		var status string
		if err := e.S.SQL.R.QueryRowContext(e.Ctx, `SELECT user_id, unit, amount_cents, status, created_ms, expires_ms FROM orders WHERE id = ?`,
			id).Scan(&user, &unit, &amount, &status, &created, &expires); err != nil {
			t.Fatalf("order %d not in the store: %v", id, err)
		}
		if user != o.UserID || unit != o.Unit || status != o.Status || amount != o.AmountCents ||
			created != o.CreatedAt.UnixMilli() || expires != o.ExpiresAt.UnixMilli() {
			t.Fatalf("order %d in the store: user %d, unit %d, %s, %d cents, created %d, expires %d; answered %+v",
				id, user, unit, status, amount, created, expires, o)
		}
	}
	if st := e.Stats(g.ID); st.Unpaid != stock || st.DB.Unpaid != stock {
		t.Fatalf("stats after flush: %+v", st)
	}
}

// 200 grabs released at once on live goods Redis has lost share one rebuild
// from SQLite, and the rebuilt goods still sells each unit once.
func TestGrabRebuildsLostGoodsOnce(t *testing.T) {
	goodstest.EachShards(t, testGrabRebuildsLostGoodsOnce)
}

func testGrabRebuildsLostGoodsOnce(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	g := e.LiveGoods(50, 1)
	if err := rdb.FlushDB(e.Ctx, e.S.Redis); err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int64
	e.S.OnLiveLoad(func(int64) { loads.Add(1) })
	const users = 200
	start := make(chan struct{})
	var wg sync.WaitGroup
	var ok, soldOut atomic.Int64
	for u := int64(1); u <= users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := e.S.Grab(e.Ctx, u, g.ID)
			switch db.ErrorCode(err) {
			case "":
				ok.Add(1)
			case db.ESOLDOUT:
				soldOut.Add(1)
			default:
				t.Errorf("user %d: %v", u, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d rebuilds from SQLite, want 1", n)
	}
	if ok.Load() != 50 || soldOut.Load() != users-50 {
		t.Fatalf("%d orders, %d sold out; want 50, %d", ok.Load(), soldOut.Load(), users-50)
	}
	e.CheckBalance(g.ID, "after the rebuild")
	if st := e.Stats(g.ID); st.Unpaid != 50 || st.Remaining != 0 {
		t.Fatalf("stats after the rebuild: unpaid %d remaining %d, want 50 and 0", st.Unpaid, st.Remaining)
	}
}

// A replica promoted after its master died may hold the goods' order
// sequence as it was some writes before (no WAIT, or a WAIT that fell
// short): grabs on it issue IDs above the whole block the dead master had
// reserved, never one it may have acknowledged. Needs a Redis Cluster
// (a single server has no replica to fail over to, and no node ID).
func TestOrderIDsNeverRepeatAfterFailover(t *testing.T) {
	e := goodstest.NewK(t, 1)
	if _, ok := e.S.Redis.(*redis.ClusterClient); !ok {
		t.Skip("order IDs after a failover: set REDIS_URL to a Redis Cluster")
	}
	g := e.LiveGoods(40, 1)
	given := map[int64]int64{} // order ID → shopper
	for u := int64(1); u <= 10; u++ {
		given[e.Grab(u, g.ID).ID] = u
	}
	if err := e.S.RollBackAsPromotedReplica(e.Ctx, g.ID, 0, 1, 4); err != nil { // the replica had 4 of the 10
		t.Fatal(err)
	}
	for u := int64(11); u <= 30; u++ {
		o := e.Grab(u, g.ID)
		if was, ok := given[o.ID]; ok {
			t.Fatalf("order ID %d given to shopper %d after it was given to shopper %d", o.ID, u, was)
		}
		given[o.ID] = u
	}
}
