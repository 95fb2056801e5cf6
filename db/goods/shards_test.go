package goods_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods/internal/sale"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// usersHomedAt returns n user IDs (from 1 up) whose home bucket of k is b.
func usersHomedAt(b, k, n int) []int64 {
	var out []int64
	for u := int64(1); len(out) < n; u++ {
		if sale.HomeBucket(u, k) == b {
			out = append(out, u)
		}
	}
	return out
}

// bucketOf is the bucket an order ID names.
func bucketOf(orderID int64) int { return int(orderID % sale.OrderSeqSpan / sale.BucketSeqSpan) }

// shardedEnv is a goods env whose goods have k buckets, with every command
// checked to stay in one cluster slot.
func shardedEnv(t *testing.T, k int) *goodsEnv {
	e := newGoodsEnvK(t, k)
	dbtest.GuardSlots(t, e.S.Redis)
	return e
}

// Hundreds of grabs released at once on goods of three buckets, users with a
// limit of 2 grabbing 4 times each: the stock is sold exactly once, no user
// holds more than the limit, the units are unique and 1..stock, each order
// is in its user's home bucket, and after the flush and the stock sync the
// store agrees with Redis (no drift).
func TestShardedGrabRace(t *testing.T) {
	const k, stock, limit, users, tries = 3, 200, 2, 150, 4
	e := shardedEnv(t, k)
	g := e.LiveGoods(stock, limit)
	if g.Shards != k {
		t.Fatalf("goods has %d shards, want %d", g.Shards, k)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var orders []*model.Order
	codes := map[string]int{}
	for u := int64(1); u <= users; u++ {
		for range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				o, err := e.S.Grab(e.Ctx, u, g.ID)
				mu.Lock()
				defer mu.Unlock()
				codes[db.ErrorCode(err)]++
				if err == nil {
					orders = append(orders, o)
				} else if c := db.ErrorCode(err); c != db.ESOLDOUT && c != db.ELIMITREACHED {
					t.Errorf("user %d: %v", u, err)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if len(orders) != stock {
		t.Fatalf("%d orders (%v), want the stock %d", len(orders), codes, stock)
	}
	perUser, units, ids := map[int64]int{}, map[int64]bool{}, map[int64]bool{}
	for _, o := range orders {
		perUser[o.UserID]++
		if units[o.Unit] || o.Unit < 1 || o.Unit > stock || ids[o.ID] {
			t.Fatalf("order %+v repeats a unit or an ID, or has a unit outside 1..%d", o, stock)
		}
		units[o.Unit], ids[o.ID] = true, true
		if b := bucketOf(o.ID); b != sale.HomeBucket(o.UserID, k) {
			t.Fatalf("order %d of user %d is in bucket %d, not the user's home %d", o.ID, o.UserID, b, sale.HomeBucket(o.UserID, k))
		}
	}
	for u, n := range perUser {
		if n > limit {
			t.Fatalf("user %d holds %d orders, limit %d", u, n, limit)
		}
	}
	if left := e.Remaining(g.ID); left != 0 {
		t.Fatalf("remaining %d, want 0", left)
	}
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	st := e.Stats(g.ID)
	if st.Unpaid != stock || st.DB.Unpaid != stock || len(st.Drift) != 0 || st.Pending != 0 {
		t.Fatalf("after the flush: unpaid %d, store %d, pending %d, drift %v", st.Unpaid, st.DB.Unpaid, st.Pending, st.Drift)
	}
	e.CheckBalance(g.ID, "after the race")
}

// A shopper whose home bucket is sold out is served from another bucket in
// the same call; the order still lives in the home bucket (so pay, cancel
// and expiry find it there) and counts against the user's limit; once every
// bucket is empty the grab is sold out.
func TestShardedFallThrough(t *testing.T) {
	const k = 3
	e := shardedEnv(t, k)
	g := e.LiveGoods(6, 1) // two units a bucket
	us := usersHomedAt(1, k, 7)
	var got []*model.Order
	for _, u := range us[:6] { // two from home, four from the others
		o := e.Grab(u, g.ID)
		if bucketOf(o.ID) != 1 {
			t.Fatalf("user %d's order %d is in bucket %d, want its home 1", u, o.ID, bucketOf(o.ID))
		}
		got = append(got, o)
	}
	_, err := e.S.Grab(e.Ctx, us[0], g.ID)
	wantCode(t, "the limit holds for an order from home", err, db.ELIMITREACHED)
	_, err = e.S.Grab(e.Ctx, us[5], g.ID)
	wantCode(t, "the limit holds for an order from another bucket", err, db.ELIMITREACHED)
	_, err = e.S.Grab(e.Ctx, us[6], g.ID)
	wantCode(t, "every bucket empty", err, db.ESOLDOUT)
	units := []int64{}
	for _, o := range got {
		units = append(units, o.Unit)
	}
	slices.Sort(units)
	if !slices.Equal(units, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("units %v, want each of 1..6 once", units)
	}
	// A unit given back to bucket 1 (its orders' home) is sold again, to a shopper of another bucket too.
	if _, err := e.S.CancelOrder(e.Ctx, got[4].UserID, got[4].ID); err != nil {
		t.Fatal(err)
	}
	other := usersHomedAt(2, k, 1)[0]
	o := e.Grab(other, g.ID)
	if o.Unit != got[4].Unit || bucketOf(o.ID) != 2 {
		t.Fatalf("after a cancel, user %d got %+v, want unit %d in bucket 2", other, o, got[4].Unit)
	}
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(g.ID); len(st.Drift) != 0 || st.Remaining != 0 || st.Unpaid != 6 || st.Cancelled != 1 {
		t.Fatalf("stats %+v, want no drift, none left, 6 unpaid, 1 cancelled", st)
	}
}

// Many grabs of one user at once, released when the home bucket is dry:
// each falls through to another bucket, and the user still ends with the
// limit exactly. A grab may answer sold out while the last units of the
// other buckets are on their way home for the user's other grabs (which
// leave them on sale there when the limit refuses them); never more than the limit wins.
func TestShardedFallThroughLimitRace(t *testing.T) {
	const k, limit = 3, 3
	e := shardedEnv(t, k)
	g := e.LiveGoods(60, limit)
	home := usersHomedAt(0, k, 21)
	for _, u := range home[:20] { // bucket 0's 20 units
		e.Grab(u, g.ID)
	}
	u := home[20]
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []*model.Order
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o, err := e.S.Grab(e.Ctx, u, g.ID)
			if err == nil {
				mu.Lock()
				won = append(won, o)
				mu.Unlock()
			} else if c := db.ErrorCode(err); c != db.ELIMITREACHED && c != db.ESOLDOUT {
				t.Errorf("grab: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != limit {
		t.Fatalf("user won %d orders, want the limit %d", len(won), limit)
	}
	// The units the refused grabs took from other buckets stayed on sale (in bucket 0's free list).
	e.CheckBalance(g.ID, "after the race")
	if left := e.Remaining(g.ID); left != 60-20-limit {
		t.Fatalf("remaining %d, want %d", left, 60-20-limit)
	}
}

// Orders in buckets other than 0 pay, refund, cancel and expire like any:
// each in its own bucket, the units back on sale, the store in agreement.
func TestShardedOrderLifecycle(t *testing.T) {
	const k = 3
	e := shardedEnv(t, k)
	g := e.LiveGoods(30, 1)
	u1, u2 := usersHomedAt(1, k, 3), usersHomedAt(2, k, 3)
	a, b, c := e.Grab(u1[0], g.ID), e.Grab(u2[0], g.ID), e.Grab(u2[1], g.ID)
	if bucketOf(a.ID) != 1 || bucketOf(b.ID) != 2 {
		t.Fatalf("orders %d, %d in buckets %d, %d", a.ID, b.ID, bucketOf(a.ID), bucketOf(b.ID))
	}
	if _, err := e.S.PayOrder(e.Ctx, u1[0], a.ID); err != nil {
		t.Fatal(err)
	}
	if p, err := e.S.PayWith(e.Ctx, u2[0], b.ID, 100, 0); err != nil || !p.Now || p.Order.PaidCents != b.AmountCents-100 {
		t.Fatalf("pay with a discount: %+v %v", p, err)
	}
	if o, err := e.S.Refund(e.Ctx, u2[0], b.ID); err != nil || o.Status != model.OrderRefunded {
		t.Fatalf("refund an order of bucket 2: %+v %v", o, err)
	}
	if o, err := e.S.Order(e.Ctx, u1[0], a.ID); err != nil || o.Status != model.OrderPaid {
		t.Fatalf("read an order of bucket 1: %+v %v", o, err)
	}
	mine, err := e.S.MyOrders(e.Ctx, u2[1])
	if err != nil || len(mine) != 1 || mine[0].ID != c.ID {
		t.Fatalf("my orders: %+v %v", mine, err)
	}
	e.Clk.Set(c.ExpiresAt)
	if n, err := e.S.ExpireDue(e.Ctx); err != nil || n != 1 {
		t.Fatalf("the expiry tick expired %d (%v), want 1", n, err)
	}
	if o, _ := e.S.Order(e.Ctx, u2[1], c.ID); o.Status != model.OrderExpired {
		t.Fatalf("order of bucket 2 after its deadline: %s", o.Status)
	}
	if _, err := e.S.Grab(e.Ctx, u2[1], g.ID); err != nil {
		t.Fatalf("the expired order freed the user's limit: %v", err)
	}
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	st := e.Stats(g.ID)
	if len(st.Drift) != 0 || st.Paid != 1 || st.Expired != 1 || st.Unpaid != 1 || st.Remaining != 28 {
		t.Fatalf("stats %+v: want no drift, 1 paid, 1 expired, 1 unpaid, 28 left", st)
	}
	e.CheckBalance(g.ID, "after the lifecycle")
	for _, o := range []*model.Order{a, b, c} {
		stored, err := e.S.OrderOf(e.Ctx, o.ID)
		if err != nil || stored.ID != o.ID {
			t.Fatalf("order %d: %+v %v", o.ID, stored, err)
		}
	}
}

// After Redis loses everything, goods of three buckets is rebuilt from the
// store: each order back in its bucket, units held stay taken, the limit
// marks hold, the sequences go on.
func TestShardedRebuildAfterRedisLoss(t *testing.T) {
	const k = 3
	e := shardedEnv(t, k)
	g := e.LiveGoods(9, 1)
	var orders []*model.Order
	for u := int64(1); u <= 6; u++ {
		orders = append(orders, e.Grab(u, g.ID))
	}
	if _, err := e.S.CancelOrder(e.Ctx, 1, orders[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.S.PayOrder(e.Ctx, 2, orders[1].ID); err != nil {
		t.Fatal(err)
	}
	e.Flush()
	if err := rdb.FlushDB(e.Ctx, e.S.Redis); err != nil {
		t.Fatal(err)
	}
	if n, err := e.S.Preheat(e.Ctx); err != nil || n != 1 {
		t.Fatalf("preheat after the loss loaded %d (%v)", n, err)
	}
	if left := e.Remaining(g.ID); left != 4 {
		t.Fatalf("remaining %d, want 4", left)
	}
	_, err := e.S.Grab(e.Ctx, 2, g.ID)
	wantCode(t, "user 2 holds an order", err, db.ELIMITREACHED)
	if _, err := e.S.PayOrder(e.Ctx, 3, orders[2].ID); err != nil {
		t.Fatalf("pay an order restored from the store: %v", err)
	}
	held := map[int64]bool{}
	maxID := map[int]int64{}
	for _, o := range orders[1:] {
		held[o.Unit] = true
		maxID[bucketOf(o.ID)] = max(maxID[bucketOf(o.ID)], o.ID)
	}
	for u := int64(10); u < 14; u++ {
		o := e.Grab(u, g.ID)
		if held[o.Unit] || o.ID <= maxID[bucketOf(o.ID)] {
			t.Fatalf("after the rebuild order %+v takes a held unit or an old ID", o)
		}
		held[o.Unit] = true
	}
	_, err = e.S.Grab(e.Ctx, 20, g.ID)
	wantCode(t, "all 9 units held", err, db.ESOLDOUT)
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(g.ID); len(st.Drift) != 0 {
		t.Fatalf("drift after the rebuild: %+v", st)
	}
}

// The bucket count may change before the sale (the goods is then loaded
// again in the new layout), not after; a process that read the old count
// is told by the grab script and reads it again.
func TestShardsChangeBeforeTheSale(t *testing.T) {
	e := shardedEnv(t, 1)
	sl := e.Slot(time.Minute, time.Hour) // inside the preheat window: loaded
	g := e.Goods(sl, 9, 1)
	other, otherClk := e.Twin()
	if got, err := other.Get(e.Ctx, g.ID); err != nil || got.Remaining != 9 { // reads the count 1
		t.Fatalf("%+v %v", got, err)
	}
	in := goods.Input{Title: g.Title, PriceCents: g.PriceCents, SeckillPriceCents: g.SeckillPriceCents, Stock: 9, LimitPerUser: 1, Shards: new(3)}
	if got, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in); err != nil || got.Shards != 3 || got.Remaining != 9 {
		t.Fatalf("three buckets before the sale: %+v %v", got, err)
	}
	in.Stock = 12 // new terms in the same three buckets
	if got, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in); err != nil || got.Shards != 3 || got.Remaining != 12 {
		t.Fatalf("new stock in three buckets: %+v %v", got, err)
	}
	in.Shards = new(9)
	_, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in)
	wantCode(t, "more buckets than 8", err, db.EINVALID)
	e.Clk.Advance(2 * time.Minute)
	otherClk.Advance(2 * time.Minute)
	users := append(usersHomedAt(1, 3, 1), usersHomedAt(2, 3, 1)...)
	for _, u := range users {
		o, err := other.Grab(e.Ctx, u, g.ID)
		if err != nil || bucketOf(o.ID) != sale.HomeBucket(u, 3) {
			t.Fatalf("grab by a process that knew one bucket: %+v %v", o, err)
		}
	}
	in.Shards = new(2)
	_, err = e.S.Update(e.Ctx, e.Merchant, g.ID, in)
	wantCode(t, "after the start", err, db.ECONFLICT)
	if left := e.Remaining(g.ID); left != 10 {
		t.Fatalf("remaining %d, want 10", left)
	}
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(g.ID); len(st.Drift) != 0 || st.Stock != 12 {
		t.Fatalf("stats %+v", st)
	}
}

// The live charts' samples add up the buckets.
func TestShardedSamples(t *testing.T) {
	e := shardedEnv(t, 3)
	g := e.LiveGoods(30, 1)
	for u := int64(1); u <= 10; u++ {
		e.Grab(u, g.ID)
	}
	if err := e.S.SampleActive(e.Ctx); err != nil {
		t.Fatal(err)
	}
	smps, err := e.S.Samples(e.Ctx, e.Merchant, g.ID)
	if err != nil || len(smps) != 1 {
		t.Fatalf("samples %+v %v", smps, err)
	}
	if s := smps[0]; s.Remaining != 20 || s.Unpaid != 10 || s.Grabs != 10 {
		t.Fatalf("sample %+v, want 20 left, 10 unpaid, 10 grabs", s)
	}
}

// One node of a cluster loses its bucket alone: a grab homed there loads
// the bucket again from the store (its flushed orders, its units held
// staying taken), and the other buckets go on as they were.
func TestShardedOneBucketLost(t *testing.T) {
	const k = 3
	e := shardedEnv(t, k)
	g := e.LiveGoods(30, 1)
	lost := usersHomedAt(1, k, 4)
	kept := usersHomedAt(2, k, 2)
	a, b := e.Grab(lost[0], g.ID), e.Grab(lost[1], g.ID)
	c := e.Grab(kept[0], g.ID)
	e.Flush()
	var del []string
	for _, name := range []string{"info", "fresh", "free", "held", "seq", "orders", "mine", "deadlines", "pending", "processing", "counts"} {
		del = append(del, sale.BucketKey(g.ID, 1, k, name))
	}
	for _, key := range del { // one at a time: the guard checks slots, and these share one
		if err := e.S.Redis.Del(e.Ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.S.Grab(e.Ctx, lost[0], g.ID)
	wantCode(t, "the limit mark came back with the bucket", err, db.ELIMITREACHED)
	d := e.Grab(lost[2], g.ID)
	if d.Unit == a.Unit || d.Unit == b.Unit || d.ID <= b.ID || bucketOf(d.ID) != 1 {
		t.Fatalf("after the bucket's rebuild %+v takes a held unit or an old ID (held %d, %d; last ID %d)", d, a.Unit, b.Unit, b.ID)
	}
	if o, err := e.S.PayOrder(e.Ctx, lost[1], b.ID); err != nil || o.Status != model.OrderPaid {
		t.Fatalf("pay an order of the rebuilt bucket: %+v %v", o, err)
	}
	if o, err := e.S.Order(e.Ctx, kept[0], c.ID); err != nil || o.Status != model.OrderUnpaid {
		t.Fatalf("an order of another bucket: %+v %v", o, err)
	}
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(g.ID); len(st.Drift) != 0 || st.Unpaid+st.Paid != 4 || st.Remaining != 26 {
		t.Fatalf("stats %+v: want no drift, 4 live orders, 26 left", st)
	}
}
