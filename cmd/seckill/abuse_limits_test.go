package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/web/ratelimit"
)

// answer is one raw HTTP exchange of the abuse tests.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (r answer) code() string {
	var e apiError
	json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// send makes one request with the given headers (a JSON body when body is not nil).
func send(t testing.TB, method, url string, headers map[string]string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, raw}
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// wantRateLimited checks a refusal is the contract's 429 with a Retry-After in seconds.
func wantRateLimited(t testing.TB, what string, r answer) {
	t.Helper()
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if r.status != 429 || r.code() != "rate_limited" || err != nil || secs < 1 {
		t.Fatalf("%s: %d %s Retry-After %q, want 429 rate_limited with Retry-After ≥ 1", what, r.status, r.body, r.header.Get("Retry-After"))
	}
}

// allowedWithin is the most a limit of n per period may allow in elapsed:
// the burst, plus what refilled meanwhile. Bounding by the time the test
// really took keeps the check true on a slow machine.
func allowedWithin(n int, per, elapsed time.Duration) int {
	return n + int(elapsed*time.Duration(n)/per) + 1
}

// RATE_GRAB: one shopper hammering a grab gets the limit and 429s, across every promotion.
func TestAbuseGrabRateLimitPerShopper(t *testing.T) {
	a := startApp(t, func(c *Config) { c.RateGrab = ratelimit.Rate{N: 5, Per: time.Minute} })
	_, g := a.liveGoods(1000, 1000)
	token, _ := a.newUser()
	other, _ := a.newUser()
	start := time.Now()
	allowed, refused := 0, 0
	for i := 0; i < 30; i++ {
		r := send(t, "POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), bearer(token), nil)
		switch r.status {
		case 201:
			allowed++
		case 429:
			wantRateLimited(t, "grab over the limit", r)
			refused++
		default:
			t.Fatalf("grab %d: %d %s", i, r.status, r.body)
		}
	}
	if most := allowedWithin(5, time.Minute, time.Since(start)); allowed < 5 || allowed > most {
		t.Fatalf("30 grabs by one shopper at 5/m: %d allowed, want 5..%d", allowed, most)
	}
	// The limit is the shopper's: another shopper is unaffected, and a red packet grab counts against the same bucket.
	if r := send(t, "POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), bearer(other), nil); r.status != 201 {
		t.Fatalf("another shopper: %d %s", r.status, r.body)
	}
	wantRateLimited(t, "red packet grab by the limited shopper", send(t, "POST", a.URL+"/api/redpackets/1/grab", bearer(token), nil))
	// Nothing was taken by the refusals.
	if st := a.stats(a.adminToken(), g.ID); st.Unpaid != int64(allowed)+1 {
		t.Fatalf("unpaid %d, want %d (the allowed grabs only)", st.Unpaid, allowed+1)
	}
}

// RATE_IP: API requests per client address; behind a trusted proxy the
// forwarded address counts, and a client cannot choose its own.
func TestAbuseIPRateLimitAndTrustedProxies(t *testing.T) {
	a := startApp(t, func(c *Config) {
		c.RateIP = ratelimit.Rate{N: 20, Per: time.Minute}
		c.TrustedProxies = "127.0.0.1/32"
	})
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	start := time.Now()
	ok := 0
	var last answer
	for i := 0; i < 40; i++ {
		if last = send(t, "GET", a.URL+"/api/slots", from("198.51.100.7"), nil); last.status == 200 {
			ok++
		}
	}
	if most := allowedWithin(20, time.Minute, time.Since(start)); ok < 20 || ok > most {
		t.Fatalf("40 requests from one address at 20/m: %d answered, want 20..%d", ok, most)
	}
	wantRateLimited(t, "over RATE_IP", last)
	if r := send(t, "GET", a.URL+"/api/slots", from("198.51.100.8"), nil); r.status != 200 {
		t.Fatalf("another client address: %d", r.status)
	}
	// The proxy appends the peer it saw; whatever the client wrote to the left is not believed.
	wantRateLimited(t, "spoofed left-most address", send(t, "GET", a.URL+"/api/slots", from("203.0.113.99, 198.51.100.7"), nil))
	// Pages and /healthz are outside the API limit.
	if r := send(t, "GET", a.URL+"/healthz", from("198.51.100.7"), nil); r.status != 200 {
		t.Fatalf("/healthz: %d", r.status)
	}

	// Without trusted proxies X-Forwarded-For is ignored: every request is the TCP peer's.
	b := startApp(t, func(c *Config) { c.RateIP = ratelimit.Rate{N: 5, Per: time.Minute} })
	start = time.Now()
	ok = 0
	for i := 0; i < 20; i++ {
		if send(t, "GET", b.URL+"/api/slots", from(fmt.Sprintf("198.51.100.%d", i)), nil).status == 200 {
			ok++
		}
	}
	if most := allowedWithin(5, time.Minute, time.Since(start)); ok > most {
		t.Fatalf("untrusted X-Forwarded-For gave fresh buckets: %d answered, want ≤ %d", ok, most)
	}
}

// RATE_AUTH: login and sign-up attempts per client address and per account, before bcrypt.
func TestAbuseAuthRateLimit(t *testing.T) {
	a := startApp(t, func(c *Config) {
		c.RateAuth = ratelimit.Rate{N: 10, Per: time.Minute}
		c.TrustedProxies = "127.0.0.1"
	})
	login := func(user, ip string) answer {
		return send(t, "POST", a.URL+"/api/auth/login", map[string]string{"X-Forwarded-For": ip},
			map[string]string{"username": user, "password": "not-the-password"})
	}
	// One address guessing many accounts.
	start := time.Now()
	tried := 0
	var r answer
	for i := 0; i < 30; i++ {
		if r = login(fmt.Sprintf("someone%d", i), "198.51.100.20"); r.status == 429 {
			break
		}
		tried++
	}
	if most := allowedWithin(10, time.Minute, time.Since(start)); tried < 10 || tried > most {
		t.Fatalf("one address: %d attempts before 429, want 10..%d", tried, most)
	}
	wantRateLimited(t, "login flood from one address", r)
	// One account guessed from many addresses.
	start = time.Now()
	tried = 0
	for i := 0; i < 30; i++ {
		if r = login("victim", fmt.Sprintf("203.0.113.%d", i+1)); r.status == 429 {
			break
		}
		tried++
	}
	if most := allowedWithin(10, time.Minute, time.Since(start)); tried > most {
		t.Fatalf("one account from many addresses: %d attempts before 429, want ≤ %d", tried, most)
	}
	wantRateLimited(t, "login flood on one account", r)
	// Sign-up counts too.
	for i := 0; i < 30; i++ {
		r = send(t, "POST", a.URL+"/api/auth/register", map[string]string{"X-Forwarded-For": "198.51.100.21"},
			map[string]string{"username": fmt.Sprintf("bot%d", i), "password": "password123"})
		if r.status == 429 {
			break
		}
	}
	wantRateLimited(t, "sign-up flood", r)
}

// Failed logins back off per account: the fifth failure locks it, even for the right password.
func TestAbuseLoginBackoff(t *testing.T) {
	a := startApp(t)
	token, _ := a.newUser()
	var me authAnswer
	a.call("GET", "/api/me", token, nil, &me)
	name := me.User.Username
	for i := 1; i <= 4; i++ {
		a.wantError("POST", "/api/auth/login", "", map[string]string{"username": name, "password": "wrong-guess"}, 401, "unauthorized")
	}
	wantRateLimited(t, "fifth failure", send(t, "POST", a.URL+"/api/auth/login", nil, map[string]string{"username": name, "password": "wrong-guess"}))
	wantRateLimited(t, "right password while locked", send(t, "POST", a.URL+"/api/auth/login", nil, map[string]string{"username": name, "password": "password123"}))
}

// A login flood gets fast refusals (429, or 503 when the bcrypt pool is
// full), never a 500 and never an unbounded queue.
func TestAbuseLoginFloodIsRefusedCleanly(t *testing.T) {
	a := startApp(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int]int{}
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send(t, "POST", a.URL+"/api/auth/login", nil, map[string]string{"username": fmt.Sprintf("ghost%d", i), "password": "password123"})
			if r.status == 503 && (r.code() != "unavailable" || r.header.Get("Retry-After") == "") {
				t.Errorf("503 without the contract's body or Retry-After: %s", r.body)
			}
			mu.Lock()
			seen[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for st := range seen {
		if st != 401 && st != 429 && st != 503 {
			t.Fatalf("login flood answers %v, want only 401, 429 or 503", seen)
		}
	}
}

// Idempotency-Key: a retried grab gets the first answer; a bad key is invalid.
func TestAbuseIdempotencyKeyOverHTTP(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(10, 3)
	token, _ := a.newUser()
	h := bearer(token)
	h["Idempotency-Key"] = "checkout-7f3a"
	url := fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID)
	var first, again struct{ Order orderJSON }
	r1, r2 := send(t, "POST", url, h, nil), send(t, "POST", url, h, nil)
	json.Unmarshal(r1.body, &first)
	json.Unmarshal(r2.body, &again)
	if r1.status != 201 || r2.status != 201 || first.Order.ID == 0 || first.Order.ID != again.Order.ID {
		t.Fatalf("keyed grab and its retry: %d %s / %d %s; want the same order twice", r1.status, r1.body, r2.status, r2.body)
	}
	if left := a.goods(g.ID).Remaining; left != 9 {
		t.Fatalf("remaining %d after a grab and its retry, want 9", left)
	}
	pay := fmt.Sprintf("%s/api/orders/%d/pay", a.URL, first.Order.ID)
	h["Idempotency-Key"] = "pay-1"
	if r := send(t, "POST", pay, h, nil); r.status != 200 {
		t.Fatalf("pay: %d %s", r.status, r.body)
	}
	if r := send(t, "POST", pay, h, nil); r.status != 200 {
		t.Fatalf("pay retried: %d %s", r.status, r.body)
	}
	h["Idempotency-Key"] = "bad\tkey"
	if r := send(t, "POST", url, h, nil); r.status != 400 || r.code() != "invalid" {
		t.Fatalf("bad key: %d %s, want 400 invalid", r.status, r.body)
	}
}

// Limits hold across web processes: each enforces its share, so a shopper
// spread over two processes still gets the limit in total.
func TestAbuseGrabLimitHoldsAcrossWebProcesses(t *testing.T) {
	a := startApp(t, func(c *Config) { c.RateGrab = ratelimit.Rate{N: 10, Per: time.Minute} })
	cfg := a.Config
	cfg.RedisURL = a.Redis.URL
	b := startMain(t, cfg, ModeWeb)
	eventually(t, 30*time.Second, "both processes to count each other", func() bool {
		return a.Web.LimitShare() == 2 && b.Web.LimitShare() == 2
	})
	_, g := a.liveGoods(1000, 1000)
	token, _ := a.newUser()
	start := time.Now()
	allowed := 0
	for i := 0; i < 40; i++ {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		if send(t, "POST", fmt.Sprintf("%s/api/goods/%d/grab", base, g.ID), bearer(token), nil).status == 201 {
			allowed++
		}
	}
	if most := allowedWithin(10, time.Minute, time.Since(start)); allowed > most || allowed < 10 {
		t.Fatalf("one shopper over two processes at 10/m: %d allowed, want 10..%d", allowed, most)
	}
}
