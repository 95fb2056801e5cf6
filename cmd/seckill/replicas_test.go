package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
)

// keyedAnswer is an answer to a keyed write: status, Retry-After, error
// code and the body.
type keyedAnswer struct {
	Status     int
	RetryAfter string
	Code       string
	Body       map[string]json.RawMessage
	Raw        string
}

// keyedCall sends a write with an Idempotency-Key.
func (a *testApp) keyedCall(method, path, token, key string) keyedAnswer {
	a.T.Helper()
	req, _ := http.NewRequest(method, a.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	ans := keyedAnswer{Status: res.StatusCode, RetryAfter: res.Header.Get("Retry-After"), Raw: string(raw)}
	json.Unmarshal(raw, &ans.Body)
	var e apiError
	if json.Unmarshal(raw, &e) == nil {
		ans.Code = e.Error.Code
	}
	return ans
}

// A grab, a pay and the other promotions' grabs are acknowledged only once
// a replica holds them: while the master's replica lags (stopped) they are
// 503 unavailable with Retry-After, never a 201 a failover could take back;
// the client's retry with the same Idempotency-Key, on any process, is
// 503 too until the replica is back, then learns what happened: the same
// order, claim or coupon, never a second. A proof of work is spent alike.
func TestAcknowledgedOnlyWhenReplicated(t *testing.T) {
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	// The longest wait the setting allows: a healthy replica confirms within
	// it however busy the machine, a stopped one never does.
	a := startApp(t, func(c *Config) { c.RedisURL, c.RedisWaitTimeout = "redis://"+master.Addr, 2*time.Second })
	merchant, g := a.liveGoods(10, 5)
	shopper, _ := a.newUser()
	grabPath := fmt.Sprintf("/api/goods/%d/grab", g.ID)
	first := a.keyedCall("POST", grabPath, shopper, "grab-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("grab with the replica in step: %+v", first)
	}
	rp := a.createRedPacket(merchant, map[string]any{"title": "Lag", "total_cents": 1000, "count": 10, "mode": "random"})
	now := time.Now()
	c := a.couponCreate(merchant, "Lag", 10, 1, now.Add(-time.Minute), now.Add(time.Hour))

	b := startMain(t, a.Config, ModeWeb) // a second web process on the same Redis
	pg := a.fairGoods(6, false, -time.Minute)
	a.powChallenge(shopper, pg.ID) // the goods' settings read before the lag

	replica.Signal(syscall.SIGSTOP)
	writes := map[string]string{ // path → key, each sent while the replica lags
		grabPath: "grab-2",
		fmt.Sprintf("/api/redpackets/%d/grab", rp.ID): "rp-1",
		fmt.Sprintf("/api/coupons/%d/grab", c.ID):     "coupon-1",
	}
	var order orderJSON
	json.Unmarshal(first.Body["order"], &order)
	writes[fmt.Sprintf("/api/orders/%d/pay", order.ID)] = "pay-1"
	for path, key := range writes {
		if ans := a.keyedCall("POST", path, shopper, key); ans.Status != http.StatusServiceUnavailable || ans.Code != "unavailable" || ans.RetryAfter == "" {
			t.Fatalf("POST %s while the replica lags: %+v, want 503 unavailable with Retry-After", path, ans)
		}
		// The keyed retry on another process (its connections wrote
		// nothing) is not answered from the memo before a replica holds
		// the original change.
		if ans := b.keyedCall("POST", path, shopper, key); ans.Status != http.StatusServiceUnavailable || ans.Code != "unavailable" {
			t.Fatalf("POST %s retried on another process while the replica lags: %+v, want 503 unavailable", path, ans)
		}
	}
	// A proof of work is spent durably: the grab that spends it waits for the replica too.
	if st, code := a.grabWith(shopper, pg.ID, solve(t, a.powChallenge(shopper, pg.ID))); st != http.StatusServiceUnavailable || code != "unavailable" {
		t.Fatalf("grab with a proof of work while the replica lags: %d %s, want 503 unavailable", st, code)
	}
	replica.Signal(syscall.SIGCONT)

	// The retries learn the outcome: each change happened once.
	for path, key := range writes {
		var ans keyedAnswer
		eventually(t, time.Minute, "POST "+path+" to be acknowledged once the replica is back", func() bool {
			ans = a.keyedCall("POST", path, shopper, key)
			return ans.Status != http.StatusServiceUnavailable
		})
		if ans.Status != http.StatusCreated && ans.Status != http.StatusOK {
			t.Fatalf("POST %s retried: %+v", path, ans)
		}
		again := a.keyedCall("POST", path, shopper, key)
		if again.Status != ans.Status || string(again.Body[firstField(ans.Body)]) != string(ans.Body[firstField(ans.Body)]) {
			t.Fatalf("POST %s retried twice: %+v then %+v", path, ans, again)
		}
	}
	var mine struct{ Orders []orderJSON }
	a.call("GET", "/api/me/orders", shopper, nil, &mine)
	if len(mine.Orders) != 2 {
		t.Fatalf("the shopper has %d orders after two keyed grabs (one retried), want 2", len(mine.Orders))
	}
	for _, o := range mine.Orders {
		if o.ID == order.ID && o.Status != "paid" {
			t.Fatalf("order %d is %s after its keyed pay was retried, want paid", o.ID, o.Status)
		}
	}
}

// firstField is the name of the answer's one top-level field ("order", "grab", ...).
func firstField(body map[string]json.RawMessage) string {
	for k := range body {
		return k
	}
	return ""
}
