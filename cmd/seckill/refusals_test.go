package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 21: refusals from memory, reopened on time. 200 shoppers hammer a
// sold-out item through two web processes while units come back one by one
// (a cancel, a refund, expiries after the clock moves on): every unit that
// comes back is sold again, and no more than the stock is ever held. The
// processes answer nearly every refusal from memory.
func TestRefusalsReopenOnTime(t *testing.T) {
	a := startApp(t)
	cfg := a.Config
	cfg.DBPath = filepath.Join(t.TempDir(), "b.db")
	cfg.RedisURL = a.Redis.URL // B shares A's Redis (embedded or real); grabs need nothing else
	b := startMain(t, cfg, ModeWeb)
	const stock = 3
	mt, g := a.liveGoods(stock, 1)

	type win struct {
		token string
		id    int64
	}
	var (
		mu       sync.Mutex
		wins     []win
		refusals atomic.Int64
		odd      atomic.Value // an answer other than 201 or 409 sold_out / limit_reached
	)
	tokens := make([]string, 200)
	for i := range tokens {
		tokens[i], _ = a.newUser()
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	client := testCrowdClient(256, 0)
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; ctx.Err() == nil; n++ {
				url := []string{a.URL, b.URL}[n%2] + fmt.Sprintf("/api/goods/%d/grab", g.ID)
				req, _ := http.NewRequestWithContext(ctx, "POST", url, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				res, err := client.Do(req)
				if err != nil {
					continue // the test is ending
				}
				var body struct {
					Order orderJSON
					Error struct{ Code string }
				}
				json.NewDecoder(res.Body).Decode(&body)
				res.Body.Close()
				switch {
				case res.StatusCode == 408:
					continue // a connection the server timed out before reading the request: nothing happened
				case res.StatusCode == 201:
					mu.Lock()
					wins = append(wins, win{tok, body.Order.ID})
					mu.Unlock()
				case res.StatusCode == 409 && (body.Error.Code == "sold_out" || body.Error.Code == "limit_reached"):
					refusals.Add(1)
				default:
					odd.Store(fmt.Sprintf("%d %s", res.StatusCode, body.Error.Code))
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	won := func() []win { mu.Lock(); defer mu.Unlock(); return append([]win(nil), wins...) }
	returned := 0
	soldAgain := func(what string) {
		t.Helper()
		eventually(t, 60*time.Second, what+": every unit that came back sold again", func() bool { return len(won()) >= stock+returned })
		if n := len(won()); n > stock+returned {
			t.Fatalf("%s: %d orders won with %d units back, more than the stock of %d", what, n, returned, stock)
		}
	}
	soldAgain("sale")
	// While nothing comes back, refusals come from memory: of 2000, at most
	// 1% asked Redis (each process asks once after each change it hears of,
	// and its poll's first read counts as one).
	fromRedis := func() int64 { return a.Goods.RefusalsFromRedis() + b.Goods.RefusalsFromRedis() }
	r0 := refusals.Load()
	eventually(t, 60*time.Second, "refusals of the sold-out item", func() bool { return refusals.Load() > r0+2000 })
	r0, f0 := refusals.Load(), fromRedis()
	eventually(t, 60*time.Second, "more refusals of the sold-out item", func() bool { return refusals.Load() > r0+2000 })
	if r, f := refusals.Load()-r0, fromRedis()-f0; f*100 > r {
		t.Fatalf("%d of %d refusals of a sold-out item asked Redis, want at most 1%%", f, r)
	}

	first := won()[0]
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", first.id), first.token, nil, nil); st != 200 {
		t.Fatalf("cancel: %d", st)
	}
	returned++
	soldAgain("cancel")

	second := won()[1]
	if st, _ := a.pay(second.token, second.id, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/refund", second.id), second.token, nil, nil); st != 200 {
		t.Fatalf("refund: %d", st)
	}
	returned++
	soldAgain("refund")

	// Every unpaid order expires: B's clock first, so no order it takes
	// meanwhile is already overdue on A, which runs the expiry.
	b.advance(a.Config.OrderTTL + time.Minute)
	a.advance(a.Config.OrderTTL + time.Minute)
	returned += stock
	soldAgain("expiry")

	stop()
	wg.Wait()
	if v := odd.Load(); v != nil {
		t.Fatalf("a grab answered %v", v)
	}
	st := a.stats(mt, g.ID)
	if st.Remaining != 0 || st.Unpaid+st.Paid != stock || st.Expired != stock || st.Cancelled != 1 {
		t.Fatalf("stats %+v: want none remaining, %d held, %d expired, 1 cancelled", st, stock, stock)
	}
	if n := len(won()); n != stock+returned {
		t.Fatalf("%d orders won, want the stock %d and the %d units that came back", n, stock, returned)
	}
	t.Logf("%d refusals in all, %d of them from Redis (a change sends every shopper waiting then to Redis once)", refusals.Load(), fromRedis())
}
