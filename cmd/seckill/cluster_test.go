package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// grabAll releases one grab per token at once and returns the status each got.
func (a *testApp) grabAll(path string, tokens []string, out func(i int) any) []int {
	a.T.Helper()
	statuses := make([]int, len(tokens))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var body any
			if out != nil {
				body = out(i)
			}
			statuses[i] = a.call("POST", path, tok, nil, body)
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

// count is how many statuses equal want.
func count(statuses []int, want int) (n int) {
	for _, s := range statuses {
		if s == want {
			n++
		}
	}
	return n
}

// A small sale of each promotion on a Redis Cluster, whose items live in
// slots of their own (and mostly on different nodes): goods sell their stock
// once, an unpaid order expires through Asynq on the cluster, a red packet
// hands out every share and its whole amount, a coupon its stock; then the
// flush brings every order, claim and grab into SQLite.
func TestSaleOfEveryPromotionOnCluster(t *testing.T) {
	const notCluster = "REDIS_URL is not a Redis Cluster (REDIS_URL=redis://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103 after docs/OPERATIONS.md's cluster recipe)"
	if os.Getenv("REDIS_URL") == "" {
		t.Skip(notCluster)
	}
	a := startApp(t, func(c *Config) { c.OrderTTL = 5 * time.Second })
	if !a.Redis.Cluster {
		t.Skip(notCluster)
	}
	const shoppers = 12
	tokens := make([]string, shoppers)
	for i := range tokens {
		tokens[i], _ = a.newUser()
	}
	merchant, _ := a.newMerchant()

	// Goods: 5 units, one each, for 12 shoppers at once; 4 pay, 1 lets it expire.
	sl := a.createSlot(merchant, -time.Minute, time.Hour)
	g := a.createGoods(merchant, sl.ID, 5, 1)
	orders := make([]struct{ Order orderJSON }, shoppers)
	st := a.grabAll(fmt.Sprintf("/api/goods/%d/grab", g.ID), tokens, func(i int) any { return &orders[i] })
	if count(st, 201) != 5 || count(st, 409) != shoppers-5 {
		t.Fatalf("goods grabs answered %v, want 5 orders and %d sold out", st, shoppers-5)
	}
	var unpaid orderJSON
	var unpaidToken string
	paid := 0
	for i, s := range st {
		if s != 201 {
			continue
		}
		if paid == 4 {
			unpaid, unpaidToken = orders[i].Order, tokens[i]
			continue
		}
		if s := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", orders[i].Order.ID), tokens[i], nil, nil); s != 200 {
			t.Fatalf("pay order %d: %d", orders[i].Order.ID, s)
		}
		paid++
	}

	// Red packet: 4 shares of 1000 cents for 12 shoppers at once.
	p := a.createRedPacket(merchant, map[string]any{"title": "cluster", "total_cents": 1000, "count": 4, "mode": "random", "expires_in": "1h"})
	grabs := make([]struct{ Grab rpGrabJSON }, shoppers)
	st = a.grabAll(fmt.Sprintf("/api/redpackets/%d/grab", p.ID), tokens, func(i int) any { return &grabs[i] })
	var cents int64
	for i, s := range st {
		if s == 201 {
			cents += grabs[i].Grab.AmountCents
		}
	}
	if count(st, 201) != 4 || cents != 1000 {
		t.Fatalf("red packet grabs answered %v handing out %d cents, want 4 grabs of 1000 cents in all", st, cents)
	}

	// Coupon: 3 in stock for 12 shoppers at once.
	now := time.Now()
	c := a.couponCreate(merchant, "cluster", 3, 1, now.Add(-time.Minute), now.Add(time.Hour))
	st = a.grabAll(fmt.Sprintf("/api/coupons/%d/grab", c.ID), tokens, nil)
	if count(st, 201) != 3 || count(st, 409) != shoppers-3 {
		t.Fatalf("coupon grabs answered %v, want 3 coupons and %d sold out", st, shoppers-3)
	}

	cc := a.Redis.Client.(*redis.ClusterClient)
	for _, key := range []string{fmt.Sprintf("{goods:%d}:info", g.ID), fmt.Sprintf("{redpacket:%d}:meta", p.ID), fmt.Sprintf("{coupon:%d}:meta", c.ID)} {
		if node, err := cc.MasterForKey(context.Background(), key); err == nil {
			t.Logf("%s lives on %s", key, node.Options().Addr)
		}
	}

	eventually(t, 15*time.Second, "the unpaid order to expire", func() bool { return a.order(unpaidToken, unpaid.ID).Status == "expired" })
	if left := a.goods(g.ID).Remaining; left != 1 {
		t.Fatalf("remaining after the expiry %d, want the unit back (1)", left)
	}
	// Asynqmon reads the queues on the cluster too.
	var queues struct {
		Queues []struct {
			Queue     string `json:"queue"`
			Processed int    `json:"processed"`
		} `json:"queues"`
	}
	if s := a.call("GET", "/monitor/api/queues", a.adminToken(), nil, &queues); s != 200 || len(queues.Queues) == 0 {
		t.Fatalf("asynqmon queues: %d %+v", s, queues)
	}
	eventually(t, 10*time.Second, "SQLite to hold every order, claim and grab", func() bool {
		gs, rs := a.stats(merchant, g.ID), a.redPacketStats(merchant, p.ID)
		var coupons int
		a.SQL.R.QueryRow(`SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID).Scan(&coupons)
		return gs.DB.Paid == 4 && gs.DB.Expired == 1 && gs.DB.Conflicts == 0 && rs.Flushed == 4 && coupons == 3
	})
}
