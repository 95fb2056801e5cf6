package redpacket_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/redpacket"
)

// grabSeq has user grab packet id and returns the share (seq) acknowledged.
func grabSeq(t *testing.T, s *redpacket.Service, user, id int64) string {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Grab(ctx, user, id); err != nil {
		t.Fatalf("grab by %d: %v", user, err)
	}
	rec, err := s.Redis.HGet(ctx, redpacket.ClaimedByKey(id), strconv.FormatInt(user, 10)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(rec, ":")[1] // request:seq:amount:ms
}

// A share acknowledged to one shopper is never given to another (issue 19),
// when a failover promoted a replica that lacked the last grabs (no WAIT):
// the packet's node changed, so the shares the dead master may have given
// are withheld, none given again; they are refunded at the expiry.
func TestSharesNeverRepeatAfterFailover(t *testing.T) {
	ctx := context.Background()
	s := plainService(t)
	if _, ok := s.Redis.(*redis.ClusterClient); !ok {
		t.Skip("shares after a failover: set REDIS_URL to a Redis Cluster")
	}
	users := addUsers(t, s, 30)
	p, err := s.Create(ctx, users[0], model.NewRedPacket{Title: "failover", TotalCents: 4000, Count: 40, Mode: model.RedPacketFixed})
	if err != nil {
		t.Fatal(err)
	}
	given := map[string]int64{} // share seq → shopper
	for i, u := range users[:10] {
		given[grabSeq(t, s, u, p.ID)] = u
		if i == 4 { // the first 5 claims reach the store
			if err := s.FlushAll(ctx, s.FlushClaims); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The replica had the first 2 grabs: 3 of those it lacks were flushed, 5 were not.
	if err := s.RollBackAsPromotedReplica(ctx, p.ID, users[2:10]); err != nil {
		t.Fatal(err)
	}
	// A shopper whose flushed share the replica lacks holds it still.
	if _, err := s.Grab(ctx, users[3], p.ID); !errors.Is(err, db.ErrAlreadyGrabbed) {
		t.Fatalf("shopper %d, whose claim was flushed, grabs again after the failover: %v, want already_grabbed", users[3], err)
	}
	for _, u := range users[10:] {
		seq := grabSeq(t, s, u, p.ID)
		if was, ok := given[seq]; ok {
			t.Fatalf("share %s given to shopper %d after it was given to shopper %d", seq, u, was)
		}
		given[seq] = u
	}
	expireAndCheckRefund(t, s, p.ID, given)
}

// The same when Redis lost the packet before any claim was flushed: the
// packet loaded again withholds the shares below the reserved ceiling.
func TestSharesNeverRepeatAfterRedisLoss(t *testing.T) {
	ctx := context.Background()
	s := plainService(t)
	users := addUsers(t, s, 30)
	p, err := s.Create(ctx, users[0], model.NewRedPacket{Title: "loss", TotalCents: 4000, Count: 40, Mode: model.RedPacketFixed})
	if err != nil {
		t.Fatal(err)
	}
	given := map[string]int64{}
	for _, u := range users[:10] {
		given[grabSeq(t, s, u, p.ID)] = u
	}
	rdb.FlushDB(ctx, s.Redis)
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range users[10:] {
		seq := grabSeq(t, s, u, p.ID)
		if was, ok := given[seq]; ok {
			t.Fatalf("share %s given to shopper %d after it was given to shopper %d", seq, u, was)
		}
		given[seq] = u
	}
	expireAndCheckRefund(t, s, p.ID, given)
}

// expireAndCheckRefund flushes the claims, expires the packet a day later
// and checks that every share is its shopper's or refunded: none withheld
// stays unaccounted for, and each shopper holds the share acknowledged last.
func expireAndCheckRefund(t *testing.T, s *redpacket.Service, id int64, given map[string]int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.FlushAll(ctx, s.FlushClaims); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(48 * time.Hour)
	s.Now = func() time.Time { return later }
	if err := s.Expire(ctx, id); err != nil {
		t.Fatal(err)
	}
	var lost, refunded, sum int64
	s.SQL.R.QueryRow(`SELECT COUNT(*) FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NULL AND refunded = 0`, id).Scan(&lost)
	s.SQL.R.QueryRow(`SELECT refunded_cents FROM redpackets WHERE id = ?`, id).Scan(&refunded)
	s.SQL.R.QueryRow(`SELECT COALESCE(SUM(amount_cents), 0) FROM redpacket_shares WHERE redpacket_id = ? AND refunded = 1`, id).Scan(&sum)
	if lost != 0 || refunded != sum || refunded == 0 {
		t.Fatalf("after the expiry: %d shares neither claimed nor refunded, refunded_cents %d of refunded shares worth %d", lost, refunded, sum)
	}
	for seq, u := range given {
		var holder int64
		s.SQL.R.QueryRow(`SELECT COALESCE(user_id, 0) FROM redpacket_shares WHERE redpacket_id = ? AND seq = ?`, id, seq).Scan(&holder)
		if holder != u && holder != 0 {
			t.Errorf("share %s acknowledged to shopper %d is shopper %d's in the store", seq, u, holder)
		}
	}
}

// The same when a flusher still holds a batch of the lost Redis's claims:
// the restore fences the packet's lane before it reads the shares, so that
// batch has committed and is read, or never commits. Here the flusher
// stands between taking its batch and applying it while Redis loses the
// packet (every key but the lane's lease: the moment before the flusher
// notices), and the shoppers whose claims it holds grab again. Each holds
// in the store the one share acknowledged to them last, and nothing else.
func TestRestoreFencesAFlushAtWork(t *testing.T) {
	ctx := context.Background()
	s := plainService(t)
	users := addUsers(t, s, 11)
	p, err := s.Create(ctx, users[0], model.NewRedPacket{Title: "fence", TotalCents: 4000, Count: 40, Mode: model.RedPacketFixed})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users[1:] {
		grabSeq(t, s, u, p.ID)
	}
	flusher, done := dbtest.HoldFlusher(ctx), make(chan error, 1)
	go func() { done <- s.FlushAll(flusher.Ctx, s.FlushClaims) }()
	<-flusher.Held
	keys, err := rdb.Keys(ctx, s.Redis, "{redpacket:"+strconv.FormatInt(p.ID, 10)+"}*")
	if err != nil {
		t.Fatal(err)
	}
	lease := backend.LeaseKey(redpacket.FlushQueue(p.ID))
	for _, k := range keys {
		if k != lease {
			s.Redis.Del(ctx, k)
		}
	}
	if err := s.Sweep(ctx); err != nil { // restores it from the store
		t.Fatal(err)
	}
	last := map[int64]string{}
	for _, u := range users[1:] { // their claims never reached the store: each may grab again
		last[u] = grabSeq(t, s, u, p.ID)
	}
	flusher.Release()
	if err := <-done; err == nil || s.Flushes.Fenced.Load() != 1 {
		t.Errorf("the flush of the lost Redis's claims ended with %v (%d batches fenced off), want it fenced off", err, s.Flushes.Fenced.Load())
	}
	if err := s.FlushAll(ctx, s.FlushClaims); err != nil {
		t.Fatal(err)
	}
	for u, seq := range last {
		var held []string
		rows, err := s.SQL.R.Query(`SELECT seq FROM redpacket_shares WHERE redpacket_id = ? AND user_id = ?`, p.ID, u)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var q string
			rows.Scan(&q)
			held = append(held, q)
		}
		rows.Close()
		if len(held) != 1 || held[0] != seq {
			t.Errorf("shopper %d holds shares %v in the store, want the one acknowledged last, %s", u, held, seq)
		}
	}
}
