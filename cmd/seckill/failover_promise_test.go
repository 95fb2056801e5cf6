package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db/sqldb"
)

// A 201 is a promise (issue 19): the hot goods' master is killed mid-sale,
// plainly and after its replica lagged 1.5 s (stopped while the master went
// on), on a Redis Cluster of three masters with a replica each, two web
// processes, a worker and PostgreSQL. A red packet and a coupon template
// live on the same master; shoppers claim them before the fault, during the
// lag and after the promotion. Every answer that was a 201 holds: each order
// is in PostgreSQL as its shopper's live order, no order ID was acknowledged
// twice, nothing is oversold and the whole stock is sold once by the end;
// each red packet share and coupon acknowledged is its shopper's, none given
// twice, none the store holds that nobody was told of; the goods is served
// again after the promotion; and no answer is a 500.
func TestFailoverKeepsEveryPromise(t *testing.T) {
	for _, c := range []struct {
		name      string
		lag, wait bool
	}{{"kill", false, true}, {"kill after the replica lagged", true, true}, {"kill after the replica lagged, no WAIT", true, false}} {
		lag := c.lag
		t.Run(c.name, func(t *testing.T) {
			const stock = 4000
			env := []string{"ORDER_TTL=10m"}
			if !c.wait {
				env = append(env, "REDIS_WAIT_REPLICAS=0")
			}
			r := startFailoverRig(t, 60, stock, 100, env...)
			web := r.webs[0]
			rpID := r.itemOnMaster(t, "redpacket", func() int64 {
				return web.createRedPacket(r.merchant, map[string]any{"title": "Failover", "total_cents": 6000, "count": 40, "mode": "random"}).ID
			})
			couponID := r.itemOnMaster(t, "coupon", func() int64 {
				now := time.Now()
				return web.couponCreate(r.merchant, "Failover", 40, 1, now.Add(-time.Minute), now.Add(time.Hour)).ID
			})
			claims := &claimLog{}
			claim := func(from, to int) { // shoppers from..to-1 claim the red packet and a coupon, each with a key kept until answered
				r.claimEach(t, claims, rpID, couponID, from, to)
			}

			claim(0, 20) // before the fault
			load := startGrabLoad(r.webs, r.tokens, r.goods.ID, failoverLoops, 10*time.Millisecond)
			if !load.waitUntil(2*time.Minute, func(as []grabAnswer) bool {
				return slices.Min(servedSince(as, time.Time{}, len(r.webs))) >= 20
			}) {
				load.stop()
				t.Fatal("the sale did not start on every web process")
			}
			var during sync.WaitGroup
			if lag {
				r.cluster.stop(r.replica)
				lagged := time.Now()
				// A stopped replica's socket still takes the stream until its
				// buffers fill: 16 MB on the goods' slot fill them, so what the
				// master acknowledges next waits in its output buffer alone
				// and is lost with it, as with a replica far behind.
				ballast := strings.Repeat("x", 16<<20)
				if err := r.cluster.admin[r.master].Set(context.Background(), goodsTag(r.goods.ID)+":ballast", ballast, 0).Err(); err != nil {
					t.Fatal(err)
				}
				during.Add(1)
				go func() { defer during.Done(); claim(20, 30) }() // while the replica lags: answered once it is back
				time.Sleep(1500*time.Millisecond - time.Since(lagged))
			}
			killed := time.Now()
			r.cluster.kill(r.master)
			if lag {
				r.cluster.cont(r.replica)
			}
			promoted := r.cluster.waitPromotion(r.replica, time.Minute)
			during.Wait()
			claim(30, 60) // after the promotion
			// Sell out: the load goes on until the goods has no unit left.
			soldOut := func() bool {
				var g struct{ Goods goodsJSON }
				return web.call("GET", fmt.Sprintf("/api/goods/%d", r.goods.ID), "", nil, &g) == http.StatusOK && g.Goods.Remaining == 0
			}
			load.waitUntil(5*time.Minute, func([]grabAnswer) bool { return soldOut() })
			answers := load.stop()
			t.Logf("promotion %.2f s after the kill", promoted.Sub(killed).Seconds())
			rep := analyse(answers, promoted, len(r.webs))
			logReport(t, rep, killed, promoted)

			for _, a := range append(rep.internal, claims.internal...) {
				t.Errorf("web-%d answered %d at K%+.2fs: %s", a.web+1, a.status, a.at.Sub(killed).Seconds(), a.body)
			}
			checkServedAgain(t, rep, promoted, len(r.webs))
			acked := ackedOrders(t, answers, killed)
			if !c.wait { // more orders acknowledged than units: the lost ones (phantom wins) are what WAIT prevents
				r.checkNoRepeats(t, acked, stock)
				r.checkClaimsNoRepeats(t, rpID, couponID, claims, promoted)
				return
			}
			if len(acked) > stock {
				t.Errorf("%d orders acknowledged for stock %d", len(acked), stock)
			}
			r.checkDurable(t, acked, stock, rpID, couponID, claims)
		})
	}
}

// checkNoRepeats is what holds without WAIT (REDIS_WAIT_REPLICAS=0): orders
// the lagging replica never had are lost with the master, but none stays a
// phantom: each is recorded failed for its shopper and told in the inbox
// (the lost ones by the web process that acknowledged them,
// db/goods/internal/orders/phantoms.go; those whose unit the dead master had sold before by
// the unit guard's reconciliation). No order ID acknowledged to one shopper
// belongs to another (the bucket skips the dead master's block:
// db/goods/internal/sale/seq_blocks.go), and the stock is sold once, none oversold.
func (r *failoverRig) checkNoRepeats(t *testing.T, acked map[int64]int64, stock int64) {
	t.Helper()
	ctx := context.Background()
	store := r.store(t)
	have := r.wholeStock(t, store, stock)
	failed := func() map[int64]int64 {
		m := pairs(t, store, `SELECT id, user_id FROM orders WHERE goods_id = ? AND status = 'failed'`, r.goods.ID)
		for id, uid := range pairs(t, store, `SELECT id, user_id FROM order_conflicts WHERE goods_id = ? AND status = 'failed'`, r.goods.ID) {
			m[id] = uid
		}
		return m
	}
	told := func() map[int64]int64 { // shopper → failed-order notices
		return pairs(t, store, `SELECT user_id, COUNT(*) FROM notifications WHERE kind = 'order_failed' AND goods_id = ? GROUP BY user_id`, r.goods.ID)
	}
	var phantoms, other int
	var want map[int64]int64 // shopper → their acknowledged orders not kept
	start := time.Now()
	eventually(t, 2*time.Minute, "every acknowledged order not kept to be recorded failed and told", func() bool {
		fs, ts := failed(), told()
		phantoms, other, want = 0, 0, map[int64]int64{}
		for id, uid := range acked {
			if got, ok := have[id]; ok {
				if got != uid {
					other++
				}
				continue
			}
			want[uid]++
			if fs[id] != uid {
				phantoms++
			}
		}
		for uid, n := range want {
			if ts[uid] < n {
				return false
			}
		}
		return phantoms == 0
	})
	var conflicts, units int64
	store.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?`, r.goods.ID).Scan(&conflicts)
	store.R.QueryRowContext(ctx, `SELECT COUNT(DISTINCT unit) FROM orders WHERE goods_id = ? AND status = 'unpaid'`, r.goods.ID).Scan(&units)
	notKept := 0
	for _, n := range want {
		notKept += int(n)
	}
	t.Logf("without WAIT: %d orders acknowledged for %d units; %d not kept (%d refused by the unit guard, the rest lost with the master), each recorded failed and told %.1f s after the sale ended; %d phantoms left; %d acknowledged IDs another shopper's in PostgreSQL",
		len(acked), stock, notKept, conflicts, time.Since(start).Seconds(), phantoms, other)
	if other != 0 {
		t.Errorf("%d acknowledged order IDs belong to another shopper in PostgreSQL: an ID issued twice", other)
	}
	if units != stock {
		t.Errorf("%d units held by live orders, want the stock %d, each once", units, stock)
	}
}

// itemOnMaster creates items of kind (create returns each one's ID) until one
// lives on the goods' master, so the fault hits it too; it returns that one.
func (r *failoverRig) itemOnMaster(t *testing.T, kind string, create func() int64) int64 {
	t.Helper()
	for range 64 {
		id := create()
		if m, _ := r.cluster.ownerOf(fmt.Sprintf("{%s:%d}", kind, id)); m == r.master {
			return id
		}
	}
	t.Fatalf("no %s on master %d after 64 tries", kind, r.master)
	return 0
}

// claimLog is what the shoppers were told about the red packet and the coupons.
type claimLog struct {
	mu       sync.Mutex
	shares   map[int64]int64     // shopper → cents acknowledged
	coupons  map[int64]int64     // user coupon ID → shopper
	internal []grabAnswer        // 500s met
	shareAt  map[int64]time.Time // shopper → when their share was acknowledged
	couponAt map[int64]time.Time // user coupon ID → when it was acknowledged
	twice    []string            // coupon IDs acknowledged to a second shopper
}

// claimEach has shoppers from..to-1 grab the red packet and the coupon, each
// call retried with its Idempotency-Key while the answer is a 503 or none.
func (r *failoverRig) claimEach(t *testing.T, log *claimLog, rpID, couponID int64, from, to int) {
	var wg sync.WaitGroup
	for i := from; i < to; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			web, uid := r.webs[i%len(r.webs)], r.shopperID(t, i)
			for _, path := range []string{fmt.Sprintf("/api/redpackets/%d/grab", rpID), fmt.Sprintf("/api/coupons/%d/grab", couponID)} {
				key := fmt.Sprintf("claim-%d-%s", i, path)
				for {
					ans := web.keyedCall("POST", path, r.tokens[i], key)
					if ans.Status >= 500 && ans.Status != http.StatusServiceUnavailable {
						log.mu.Lock()
						log.internal = append(log.internal, grabAnswer{at: time.Now(), web: i % len(r.webs), status: ans.Status, body: fmt.Sprint(ans.Body)})
						log.mu.Unlock()
					}
					if ans.Status == http.StatusServiceUnavailable || ans.Status == 0 || ans.Status >= 500 {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					if ans.Status == http.StatusCreated {
						log.mu.Lock()
						if log.shares == nil {
							log.shares, log.coupons = map[int64]int64{}, map[int64]int64{}
							log.shareAt, log.couponAt = map[int64]time.Time{}, map[int64]time.Time{}
						}
						if g, ok := ans.Body["grab"]; ok {
							var grab struct {
								AmountCents int64 `json:"amount_cents"`
							}
							json.Unmarshal(g, &grab)
							log.shares[uid] = grab.AmountCents
							log.shareAt[uid] = time.Now()
						}
						if c, ok := ans.Body["user_coupon"]; ok {
							var uc struct {
								ID int64 `json:"id"`
							}
							json.Unmarshal(c, &uc)
							if was, ok := log.coupons[uc.ID]; ok && was != uid {
								log.twice = append(log.twice, fmt.Sprintf("coupon %d acknowledged to shopper %d and then to shopper %d", uc.ID, was, uid))
							}
							log.coupons[uc.ID] = uid
							log.couponAt[uc.ID] = time.Now()
						}
						log.mu.Unlock()
					}
					break
				}
			}
		}()
	}
	wg.Wait()
}

// shopperID is the user ID of shopper i.
func (r *failoverRig) shopperID(t *testing.T, i int) int64 {
	var me struct {
		User struct {
			ID int64 `json:"id"`
		} `json:"user"`
	}
	if st := r.webs[0].call("GET", "/api/me", r.tokens[i], nil, &me); st != http.StatusOK {
		t.Errorf("GET /api/me: %d", st)
	}
	return me.User.ID
}

// checkDurable waits until PostgreSQL holds every acknowledged order as its
// shopper's live order and the whole stock is sold, then checks that the
// store holds nothing more: no order of a unit twice, no conflict, each
// share and coupon acknowledged, none that nobody was told of.
func (r *failoverRig) checkDurable(t *testing.T, acked map[int64]int64, stock int64, rpID, couponID int64, claims *claimLog) {
	t.Helper()
	ctx := context.Background()
	store := r.store(t)
	orders := func() map[int64]int64 {
		return pairs(t, store, `SELECT id, user_id FROM orders WHERE goods_id = ? AND status = 'unpaid'`, r.goods.ID)
	}
	var have map[int64]int64
	missing := 0
	soldOut := time.Now()
	eventually(t, 2*time.Minute, "PostgreSQL to hold every acknowledged order and the whole stock", func() bool {
		have, missing = orders(), 0
		for id, uid := range acked {
			if have[id] != uid {
				missing++
			}
		}
		return missing == 0 && int64(len(have)) == stock
	})
	t.Logf("durable record caught up %.2f s after the sale ended (the load stopped)", time.Since(soldOut).Seconds())
	var conflicts, units int64
	store.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?`, r.goods.ID).Scan(&conflicts)
	store.R.QueryRowContext(ctx, `SELECT COUNT(DISTINCT unit) FROM orders WHERE goods_id = ? AND status = 'unpaid'`, r.goods.ID).Scan(&units)
	if conflicts != 0 || units != stock {
		t.Errorf("PostgreSQL: %d orders refused by the unit guard, %d units held by %d live orders (stock %d)", conflicts, units, len(have), stock)
	}
	t.Logf("goods: %d orders acknowledged, %d live orders in PostgreSQL (the rest sold to retries whose answer was lost in flight or after the load stopped), stock %d",
		len(acked), len(have), stock)

	claims.mu.Lock()
	defer claims.mu.Unlock()
	shares := func() map[int64]int64 {
		return pairs(t, store, `SELECT user_id, amount_cents FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, rpID)
	}
	coupons := func() map[int64]int64 {
		return pairs(t, store, `SELECT id, user_id FROM user_coupons WHERE coupon_id = ?`, couponID)
	}
	eventually(t, 2*time.Minute, "PostgreSQL to hold every acknowledged share and coupon", func() bool {
		s, c := shares(), coupons()
		return fmt.Sprint(s) == fmt.Sprint(claims.shares) && fmt.Sprint(c) == fmt.Sprint(claims.coupons)
	})
	if len(claims.shares) == 0 || len(claims.coupons) == 0 {
		t.Errorf("nothing claimed: %d shares, %d coupons", len(claims.shares), len(claims.coupons))
	}
}

// ackedOrders reads the orders the grabs acknowledged (order ID → shopper)
// and fails the test for each ID acknowledged to two shoppers, with when
// (K: seconds from the fault at killed) and by which web process.
func ackedOrders(t *testing.T, answers []grabAnswer, killed time.Time) map[int64]int64 {
	t.Helper()
	acked := map[int64]int64{}
	first := map[int64]grabAnswer{}
	for _, a := range answers {
		if a.status != http.StatusCreated {
			continue
		}
		if f, ok := first[a.order]; ok && f.user != a.user {
			t.Errorf("order %d acknowledged to shopper %d (web-%d, K%+.2fs) and to shopper %d (web-%d, K%+.2fs)",
				a.order, f.user, f.web+1, f.at.Sub(killed).Seconds(), a.user, a.web+1, a.at.Sub(killed).Seconds())
		} else if !ok {
			first[a.order] = a
		}
		acked[a.order] = a.user
	}
	return acked
}

// store opens the rig's PostgreSQL for a test's checks, closed at its end.
func (r *failoverRig) store(t *testing.T) *sqldb.DB {
	t.Helper()
	store, err := sqldb.Open(context.Background(), r.hosts.db, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// wholeStock waits until PostgreSQL holds stock live orders of the rig's
// goods (the sale sold out and flushed) and returns them: order ID → shopper.
func (r *failoverRig) wholeStock(t *testing.T, store *sqldb.DB, stock int64) map[int64]int64 {
	t.Helper()
	var have map[int64]int64
	eventually(t, 2*time.Minute, "PostgreSQL to hold the whole stock", func() bool {
		have = pairs(t, store, `SELECT id, user_id FROM orders WHERE goods_id = ? AND status = 'unpaid'`, r.goods.ID)
		return int64(len(have)) == stock
	})
	return have
}

// checkClaimsNoRepeats is what holds of the red packet and the coupons
// without WAIT: no share or coupon ID acknowledged to one shopper is given
// to another (after the promotion the packet and the template skip what the
// dead master may have given: db/redpacket/ceiling.go, db/coupon/ceiling.go).
// Every claim acknowledged after the promotion is its shopper's in
// PostgreSQL (a share the dead master had given again would be refused
// there), and no coupon PostgreSQL holds is another shopper's than the one
// it was acknowledged to. Claims acknowledged before the fault that the
// dead master took with it are lost; they are logged (nobody tells their
// shoppers yet, unlike goods orders).
func (r *failoverRig) checkClaimsNoRepeats(t *testing.T, rpID, couponID int64, claims *claimLog, promoted time.Time) {
	t.Helper()
	store := r.store(t)
	claims.mu.Lock()
	defer claims.mu.Unlock()
	for _, e := range claims.twice {
		t.Error(e)
	}
	var shares, coupons map[int64]int64
	var late []string
	var lostShares, lostCoupons int
	check := func() bool {
		shares = pairs(t, store, `SELECT user_id, amount_cents FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, rpID)
		coupons = pairs(t, store, `SELECT id, user_id FROM user_coupons WHERE coupon_id = ?`, couponID)
		late, lostShares, lostCoupons = nil, 0, 0
		for uid, cents := range claims.shares {
			if got, ok := shares[uid]; ok && got == cents {
				continue
			}
			if claims.shareAt[uid].After(promoted) {
				late = append(late, fmt.Sprintf("a share of %d cents acknowledged to shopper %d after the promotion is not theirs in PostgreSQL", cents, uid))
			} else {
				lostShares++
			}
		}
		for id, uid := range claims.coupons {
			if got, ok := coupons[id]; ok && got == uid {
				continue
			}
			if _, ok := coupons[id]; !ok && !claims.couponAt[id].After(promoted) {
				lostCoupons++
			} else {
				late = append(late, fmt.Sprintf("coupon %d acknowledged to shopper %d is not theirs in PostgreSQL", id, uid))
			}
		}
		return len(late) == 0
	}
	// Until the flush has them all, or for a generous while: a claim the
	// store refused (a share or unit given twice) never comes.
	for deadline := time.Now().Add(2 * time.Minute); !check() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, e := range late {
		t.Error(e)
	}
	if len(late) > 0 {
		r.dumpRedPacket(t, store, rpID)
	}
	for id, uid := range claims.coupons {
		if got, ok := coupons[id]; ok && got != uid {
			t.Errorf("coupon %d acknowledged to shopper %d is shopper %d's in PostgreSQL", id, uid, got)
		}
	}
	var refused int64
	store.R.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM coupon_conflicts WHERE coupon_id = ? AND reason = 'unit_taken'`, couponID).Scan(&refused)
	if refused != 0 {
		t.Errorf("%d coupon grabs refused by the unit guard: a unit given twice", refused)
	}
	t.Logf("without WAIT: %d shares and %d coupons acknowledged; lost with the master (acknowledged before the fault, not told): %d shares, %d coupons",
		len(claims.shares), len(claims.coupons), lostShares, lostCoupons)
	if len(claims.shares) == 0 || len(claims.coupons) == 0 {
		t.Errorf("nothing claimed: %d shares, %d coupons", len(claims.shares), len(claims.coupons))
	}
}

// dumpRedPacket logs what PostgreSQL and the promoted master hold of red
// packet id, for a failure to be read.
func (r *failoverRig) dumpRedPacket(t *testing.T, store *sqldb.DB, id int64) {
	t.Helper()
	rows, err := store.R.QueryContext(context.Background(), `SELECT seq, amount_cents, COALESCE(user_id, 0), grabbed_ms, refunded FROM redpacket_shares WHERE redpacket_id = ? ORDER BY seq`, id)
	if err != nil {
		t.Logf("read the shares: %v", err)
		return
	}
	var b strings.Builder
	for rows.Next() {
		var seq, cents, uid, ms, refunded int64
		rows.Scan(&seq, &cents, &uid, &ms, &refunded)
		fmt.Fprintf(&b, " %d:%d:%d:%d:%d", seq, cents, uid, ms, refunded)
	}
	rows.Close()
	var ceiling int64
	store.R.QueryRowContext(context.Background(), `SELECT ceiling FROM id_ceilings WHERE kind = 'redpacket' AND item_id = ?`, id).Scan(&ceiling)
	t.Logf("PostgreSQL: shares (seq:cents:user:grabbed_ms:refunded)%s; ceiling %d", b.String(), ceiling)
	ctx := context.Background()
	tag := fmt.Sprintf("{redpacket:%d}", id)
	master := r.cluster.admin[r.replica]
	t.Logf("promoted master: meta %v; claimed_by %v; unclaimed %v; withheld %v; claimed %v; processing %v", master.HGetAll(ctx, tag+":meta").Val(),
		master.HGetAll(ctx, tag+":claimed_by").Val(), master.LRange(ctx, tag+":unclaimed", 0, -1).Val(), master.LRange(ctx, tag+":withheld", 0, -1).Val(),
		master.LRange(ctx, tag+":claimed", 0, -1).Val(), master.LRange(ctx, tag+":processing", 0, -1).Val())
}
