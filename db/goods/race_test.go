package goods_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/db"
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
