package orders_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/orders"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// expireDue runs one expiry tick and fails the test on an error.
func expireDue(e *goodstest.Env) int {
	e.T.Helper()
	n, err := e.S.ExpireDue(e.Ctx)
	if err != nil {
		e.T.Fatalf("expiry tick: %v", err)
	}
	return n
}

// checkSettled flushes and checks that Redis and the store agree on every
// count, and that Redis balances.
func checkSettled(e *goodstest.Env, goodsID int64, unpaid, paid, expired int64) {
	e.T.Helper()
	e.CheckBalance(goodsID, "settled")
	e.Flush()
	st := e.Stats(goodsID)
	if st.Unpaid != unpaid || st.Paid != paid || st.Expired != expired {
		e.T.Fatalf("Redis: %d unpaid, %d paid, %d expired; want %d, %d, %d", st.Unpaid, st.Paid, st.Expired, unpaid, paid, expired)
	}
	if st.DB.Unpaid != unpaid || st.DB.Paid != paid || st.DB.Expired != expired {
		e.T.Fatalf("store: %d unpaid, %d paid, %d expired; want %d, %d, %d", st.DB.Unpaid, st.DB.Paid, st.DB.Expired, unpaid, paid, expired)
	}
}

// An order expires on the first tick at or after its deadline, never on one
// a millisecond before, and exactly once: later ticks find nothing. A tick
// expires more than one batch holds: all of them, given the time (a
// product's tick leaves what it has not done in its few seconds of wall
// clock to the next; the test gives it an hour, so a busy machine cannot
// cut it short).
func TestExpireDueAtDeadlineOnce(t *testing.T) { goodstest.EachShards(t, testExpireDueAtDeadlineOnce) }

func testExpireDueAtDeadlineOnce(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	const batch = orders.ExpiryBatch
	const n = batch*2 + 17
	g := e.LiveGoods(n+5, 1)
	orders := e.GrabMany(g.ID, n)
	deadline := orders[0].ExpiresAt // the clock stood still: one deadline for all
	e.Clk.Set(deadline.Add(-time.Millisecond))
	if got := expireDue(e); got != 0 {
		t.Fatalf("a millisecond before the deadline a tick expired %d", got)
	}
	if o, _ := e.S.Order(e.Ctx, int64(n), orders[n-1].ID); o.Status != model.OrderUnpaid {
		t.Fatalf("order expired before its deadline: %+v", o)
	}
	e.Clk.Set(deadline)
	got, err := e.S.ExpireDueWithin(e.Ctx, time.Hour)
	if err != nil {
		t.Fatalf("expiry tick: %v", err)
	}
	if got != n {
		t.Fatalf("at the deadline a tick expired %d, want all %d (more than one batch of %d)", got, n, batch)
	}
	if got := expireDue(e); got != 0 {
		t.Fatalf("a second tick expired %d more", got)
	}
	if left := e.Remaining(g.ID); left != n+5 {
		t.Fatalf("remaining %d, want every unit back (%d)", left, n+5)
	}
	if z, _ := e.S.Redis.ZCard(e.Ctx, sale.Key(g.ID, "deadlines")).Result(); z != 0 {
		t.Fatalf("%d deadlines left", z)
	}
	checkSettled(e, g.ID, 0, 0, n)
	// The users' limit marks were cleared: each may grab again.
	e.Grab(1, g.ID)
}

// Pays released at once against an expiry tick at the deadline: every order
// ends paid or expired, never both and never neither; a paid order keeps its
// unit and an expired one gives it back. The tick goes through the orders
// first to last in batches while the payers go last to first, so they meet.
func TestExpireDueRacesPay(t *testing.T) { goodstest.EachShards(t, testExpireDueRacesPay) }

func testExpireDueRacesPay(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	const n = 3 * orders.ExpiryBatch
	g := e.LiveGoods(n, 1)
	orders := e.GrabMany(g.ID, n)
	e.Clk.Set(orders[n-1].ExpiresAt) // the tick sees every order due
	start := make(chan struct{})
	var wg sync.WaitGroup
	var paid, refused atomic.Int64
	var next atomic.Int64
	next.Store(n)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := next.Add(-1); i >= 0; i = next.Add(-1) {
				o := orders[i]
				// The payer's clock reads a millisecond before the order's own deadline.
				_, err := e.S.PayAt(e.Ctx, i+1, o.ID, o.ExpiresAt.Add(-time.Millisecond))
				switch db.ErrorCode(err) {
				case "":
					paid.Add(1)
				case db.EEXPIRED:
					refused.Add(1)
				default:
					t.Errorf("pay %d: %v", o.ID, err)
				}
			}
		}()
	}
	var expired int
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		n, err := e.S.ExpireDue(e.Ctx)
		if err != nil {
			t.Errorf("tick: %v", err)
		}
		expired = n
	}()
	close(start)
	wg.Wait()
	if paid.Load()+int64(expired) != n || refused.Load() != int64(expired) {
		t.Fatalf("%d paid + %d expired by the tick != %d orders (%d pays refused)", paid.Load(), expired, n, refused.Load())
	}
	for i, o := range orders {
		got, err := e.S.Order(e.Ctx, int64(i+1), o.ID)
		if err != nil || (got.Status != model.OrderPaid && got.Status != model.OrderExpired) {
			t.Fatalf("order %d ended %+v (%v)", o.ID, got, err)
		}
	}
	if got := expireDue(e); got != 0 {
		t.Fatalf("a later tick expired %d more", got)
	}
	if left := e.Remaining(g.ID); left != int64(expired) {
		t.Fatalf("remaining %d, want the %d expired units back", left, expired)
	}
	checkSettled(e, g.ID, 0, paid.Load(), int64(expired))
	t.Logf("%d paid, %d expired", paid.Load(), expired)
}

// Ticks released at once (several workers' schedulers) expire a bucket one
// at a time: every order expires exactly once, and each bucket's orders by
// one tick (several ticks share the work only across buckets).
func TestExpireDueOneTickAtATime(t *testing.T) { goodstest.EachShards(t, testExpireDueOneTickAtATime) }

func testExpireDueOneTickAtATime(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	const n = 400
	g := e.LiveGoods(n, 1)
	orders := e.GrabMany(g.ID, n)
	e.Clk.Set(orders[n-1].ExpiresAt)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var total, ran atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			k, err := e.S.ExpireDue(e.Ctx)
			if err != nil {
				t.Errorf("tick: %v", err)
			}
			if k > 0 {
				ran.Add(1)
			}
			total.Add(int64(k))
		}()
	}
	close(start)
	wg.Wait()
	if total.Load() != n || ran.Load() < 1 || ran.Load() > int64(max(k, 1)) {
		t.Fatalf("ticks expired %d orders in %d ticks, want %d in at most %d (one a bucket)", total.Load(), ran.Load(), n, max(k, 1))
	}
	checkSettled(e, g.ID, 0, 0, n)
}

// A tick that died after one batch leaves its locks and the rest of the due
// orders: no tick expires the goods while the dead locks last, and the first
// one after them expires the rest, each order once.
func TestExpireDueAfterCrashedTick(t *testing.T) {
	goodstest.EachShards(t, testExpireDueAfterCrashedTick)
}

func testExpireDueAfterCrashedTick(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	const n = 50
	g := e.LiveGoods(n, 1)
	orders := e.GrabMany(g.ID, n)
	e.Clk.Set(orders[n-1].ExpiresAt)
	locks, err := e.S.ExpiryLockKeys(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range locks {
		if err := e.S.Redis.Set(e.Ctx, key, "dead-tick", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if k, err := e.S.ExpireFirstDue(e.Ctx, g.ID, 20); err != nil || k != 20 {
		t.Fatalf("the dead tick's batch expired %d (%v), want 20", k, err)
	}
	if got := expireDue(e); got != 0 {
		t.Fatalf("a tick ran beside the dead tick's lock and expired %d", got)
	}
	// The lock's TTL runs out (here: it goes); the next tick takes over.
	for _, key := range locks { // one by one: each bucket is its own slot
		e.S.Redis.Del(e.Ctx, key)
	}
	if got := expireDue(e); got != n-20 {
		t.Fatalf("the next tick expired %d, want the %d left", got, n-20)
	}
	for _, key := range locks {
		if n, _ := e.S.Redis.Exists(e.Ctx, key).Result(); n != 0 {
			t.Fatalf("the tick left its lock %s behind", key)
		}
	}
	checkSettled(e, g.ID, 0, 0, n)
}

// A deadline entry whose order is no longer unpaid (left by an older
// release or a script that missed it) is dropped, not visited every tick;
// the paid order stays paid.
func TestExpireDueDropsStaleDeadlines(t *testing.T) {
	goodstest.EachShards(t, testExpireDueDropsStaleDeadlines)
}

func testExpireDueDropsStaleDeadlines(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	g := e.LiveGoods(5, 1)
	o := e.Grab(1, g.ID)
	if _, err := e.S.PayOrder(e.Ctx, 1, o.ID); err != nil {
		t.Fatal(err)
	}
	_, seq, _ := sale.SplitOrderID(o.ID)
	key := sale.Key(g.ID, "deadlines")
	e.S.Redis.ZAdd(e.Ctx, key, redis.Z{Score: float64(o.ExpiresAt.UnixMilli()), Member: strconv.FormatInt(seq, 10)})
	e.Clk.Set(o.ExpiresAt.Add(time.Second))
	if got := expireDue(e); got != 0 {
		t.Fatalf("expired %d paid orders", got)
	}
	if z, _ := e.S.Redis.ZCard(e.Ctx, key).Result(); z != 0 {
		t.Fatalf("the stale deadline stayed (%d entries)", z)
	}
	if got, _ := e.S.Order(e.Ctx, 1, o.ID); got.Status != model.OrderPaid {
		t.Fatalf("paid order became %q", got.Status)
	}
}

// Each goods' expiry has its own lock: while another worker's tick holds
// goods A's (it is expiring A), a tick expires goods B's due orders and
// leaves A's to it; once A's lock is free, the next tick expires A's, each
// order once.
func TestExpireDueLockPerGoods(t *testing.T) { goodstest.EachShards(t, testExpireDueLockPerGoods) }

func testExpireDueLockPerGoods(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	const n = 30
	a, b := e.LiveGoods(n, 1), e.LiveGoods(n, 1)
	ordersA := e.GrabMany(a.ID, n)
	ordersB := e.GrabMany(b.ID, n)
	e.Clk.Set(goodstest.Later(ordersA[n-1].ExpiresAt, ordersB[n-1].ExpiresAt))
	locksA, err := e.S.ExpiryLockKeys(e.Ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range locksA {
		if err := e.S.Redis.Set(e.Ctx, key, "worker-2-tick", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := expireDue(e); got != n {
		t.Fatalf("the tick beside worker-2's tick on goods %d expired %d, want goods %d's %d", a.ID, got, b.ID, n)
	}
	if st := e.Stats(a.ID); st.Expired != 0 {
		t.Fatalf("goods %d, locked by worker-2's tick, had %d orders expired by another tick", a.ID, st.Expired)
	}
	for _, key := range locksA { // one by one: each bucket is its own slot
		e.S.Redis.Del(e.Ctx, key)
	}
	if got := expireDue(e); got != n {
		t.Fatalf("the tick after worker-2's expired %d, want goods %d's %d", got, a.ID, n)
	}
	checkSettled(e, a.ID, 0, 0, n)
	checkSettled(e, b.ID, 0, 0, n)
}

// Pay and expire released together, 200 rounds: exactly one wins each round
// and remaining + unpaid + paid == stock after every round.
func TestPayVersusExpire(t *testing.T) { goodstest.EachShards(t, testPayVersusExpire) }

func testPayVersusExpire(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
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
