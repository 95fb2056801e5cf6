package coupon_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// A coupon ID acknowledged to one shopper is never given to another (issue
// 19), when a failover promoted a replica that lacked the last grabs (no
// WAIT): the template's node changed, so the next unit is above every unit
// the dead master may have given.
func TestCouponIDsNeverRepeatAfterFailover(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	if _, ok := cs.Redis.(*redis.ClusterClient); !ok {
		t.Skip("coupon IDs after a failover: set REDIS_URL to a Redis Cluster")
	}
	now := time.Now()
	c := cs.create(t, 40, 1, now.Add(-time.Minute), now.Add(time.Hour))
	users := cs.users(t, "f", 30)
	given := cs.grabAll(t, c.ID, users[:5], nil)
	if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil { // the first 5 reach the store
		t.Fatal(err)
	}
	cs.grabAll(t, c.ID, users[5:10], given)
	// The replica had the first 2 grabs: 3 of those it lacks were flushed, 5 were not.
	if err := cs.RollBackAsPromotedReplica(ctx, c.ID, users[2:10]); err != nil {
		t.Fatal(err)
	}
	// A shopper whose flushed coupon the replica lacks holds it still: no second one.
	if _, err := cs.Grab(ctx, users[3], c.ID, ""); db.ErrorCode(err) != db.ELIMITREACHED {
		t.Fatalf("shopper %d, whose coupon was flushed, grabs again after the failover: %v, want limit_reached", users[3], err)
	}
	cs.grabAll(t, c.ID, users[10:], given)
	cs.checkKept(t, c.ID, given)
}

// The same when Redis lost the template before any grab was flushed: the
// template loaded again starts above the reserved ceiling.
func TestCouponIDsNeverRepeatAfterRedisLoss(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 40, 1, now.Add(-time.Minute), now.Add(time.Hour))
	users := cs.users(t, "l", 30)
	given := cs.grabAll(t, c.ID, users[:10], nil)
	rdb.FlushDB(ctx, cs.redis.Client)
	cs.grabAll(t, c.ID, users[10:], given)
	cs.checkKept(t, c.ID, given)
}

// grabAll has each user grab the template and fails the test for a coupon ID
// acknowledged before (given: coupon ID → shopper, filled in).
func (cs *testService) grabAll(t *testing.T, couponID int64, users []int64, given map[int64]int64) map[int64]int64 {
	t.Helper()
	if given == nil {
		given = map[int64]int64{}
	}
	for _, u := range users {
		uc, err := cs.Grab(context.Background(), u, couponID, "")
		if err != nil {
			t.Fatalf("grab by %d: %v", u, err)
		}
		if was, ok := given[uc.ID]; ok {
			t.Fatalf("coupon ID %d given to shopper %d after it was given to shopper %d", uc.ID, u, was)
		}
		given[uc.ID] = u
	}
	return given
}

// checkKept flushes and checks that no coupon in the store belongs to
// another shopper than the one it was acknowledged to, and that no grab
// acknowledged after the fault was refused.
func (cs *testService) checkKept(t *testing.T, couponID int64, given map[int64]int64) {
	t.Helper()
	if err := cs.FlushAll(context.Background(), cs.FlushGrabs); err != nil {
		t.Fatal(err)
	}
	rows, err := cs.SQL.R.Query(`SELECT id, user_id FROM user_coupons WHERE coupon_id = ?`, couponID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, uid int64
		rows.Scan(&id, &uid)
		if was, ok := given[id]; ok && was != uid {
			t.Errorf("coupon %d acknowledged to shopper %d is shopper %d's in the store", id, was, uid)
		}
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM coupon_conflicts WHERE coupon_id = ?`, couponID); n != 0 {
		t.Errorf("%d grabs refused by the durable guard", n)
	}
}

// The same when a flusher still holds a batch of the lost Redis's grabs: the
// template loaded again fences its lane before it counts the store's grabs,
// so that batch has committed and is counted, or never commits. Here it
// stands between taking its batch and applying it while Redis loses the
// template (every key but the lane's lease: the moment before the flusher
// notices), and the shoppers whose grabs it holds grab again, limit one
// each. No grab acknowledged after the loss is refused by the store.
func TestCouponReloadFencesAFlushAtWork(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 40, 1, now.Add(-time.Minute), now.Add(time.Hour))
	users := cs.users(t, "f", 10)
	cs.grabAll(t, c.ID, users, nil)
	flusher, done := dbtest.HoldFlusher(ctx), make(chan error, 1)
	go func() { done <- cs.FlushAll(flusher.Ctx, cs.FlushGrabs) }()
	<-flusher.Held
	lease := backend.LeaseKey(coupon.GrabQueue(c.ID))
	for _, k := range cs.templateKeys(t, c.ID) {
		if k != lease {
			cs.redis.Client.Del(ctx, k)
		}
	}
	given := cs.grabAll(t, c.ID, users, nil) // the lost grabs never reached the store: each may grab again
	flusher.Release()
	if err := <-done; err == nil || cs.Flushes.Fenced.Load() != 1 {
		t.Errorf("the flush of the lost Redis's grabs ended with %v (%d batches fenced off), want it fenced off", err, cs.Flushes.Fenced.Load())
	}
	cs.checkKept(t, c.ID, given)
}
