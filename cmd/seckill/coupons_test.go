package main

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/db/rdb"
)

// couponJSON is a coupon template as the API answers it.
type couponJSON struct {
	ID            int64     `json:"id"`
	Title         string    `json:"title"`
	Kind          string    `json:"kind"`
	Value         int64     `json:"value"`
	MinSpendCents int64     `json:"min_spend_cents"`
	Stock         int64     `json:"stock"`
	LimitPerUser  int64     `json:"limit_per_user"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	GrabEndAt     time.Time `json:"grab_end_at"`
	ValidDays     int       `json:"valid_days"`
	Remaining     int64     `json:"remaining"`
	State         string    `json:"state"`
}

type reminderJSON struct {
	CouponID      int64     `json:"coupon_id"`
	MinutesBefore int       `json:"minutes_before"`
	Channel       string    `json:"channel"`
	RemindAt      time.Time `json:"remind_at"`
}

type notificationJSON struct {
	ID        int64     `json:"id"`
	Kind      string    `json:"kind"`
	CouponID  int64     `json:"coupon_id"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
	Read      bool      `json:"read"`
}

// couponCreate has the merchant create a template starting and ending at the given times.
func (a *testApp) couponCreate(token, title string, stock, limit int64, start, end time.Time) couponJSON {
	a.T.Helper()
	var out struct{ Coupon couponJSON }
	body := map[string]any{"title": title, "kind": "amount_off", "value": 500, "min_spend_cents": 2000, "stock": stock,
		"limit_per_user": limit, "grab_start_at": start.Format(time.RFC3339), "grab_end_at": end.Format(time.RFC3339)}
	if st := a.call("POST", "/api/admin/coupons", token, body, &out); st != 201 {
		a.T.Fatalf("create coupon: %d", st)
	}
	return out.Coupon
}

// couponBook books a reminder and fails the test unless it is accepted.
func (a *testApp) couponBook(token string, couponID int64, minutes int, channel string) []reminderJSON {
	a.T.Helper()
	var out struct{ Reminders []reminderJSON }
	if st := a.call("PUT", fmt.Sprintf("/api/coupons/%d/reminders", couponID), token, map[string]any{"minutes_before": minutes, "channel": channel}, &out); st != 200 {
		a.T.Fatalf("book %d/%s on coupon %d: %d", minutes, channel, couponID, st)
	}
	return out.Reminders
}

func (a *testApp) couponSettings(token string, settings map[string]string) {
	a.T.Helper()
	if st := a.call("PUT", "/api/me/settings", token, settings, nil); st != 200 {
		a.T.Fatalf("settings %v: %d", settings, st)
	}
}

func (a *testApp) couponInbox(token string) []notificationJSON {
	a.T.Helper()
	var out struct{ Notifications []notificationJSON }
	if st := a.call("GET", "/api/me/notifications", token, nil, &out); st != 200 {
		a.T.Fatalf("inbox: %d", st)
	}
	return out.Notifications
}

// couponLive opens the user's live socket and returns the events it receives.
func (a *testApp) couponLive(token string) <-chan map[string]any {
	a.T.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(strings.Replace(a.URL, "http", "ws", 1)+"/ws?token="+token, nil)
	if err != nil {
		a.T.Fatalf("dial live: %v", err)
	}
	a.T.Cleanup(func() { conn.Close() })
	out := make(chan map[string]any, 64)
	go func() {
		defer close(out)
		for {
			var ev map[string]any
			if err := conn.ReadJSON(&ev); err != nil {
				return
			}
			out <- ev
		}
	}()
	return out
}

func TestCouponsHTTPContract(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	other, _ := a.newMerchant()
	shopper, _ := a.newUser()
	now := time.Now()

	// Creating: the merchant only, and only valid templates.
	valid := map[string]any{"title": "Five off", "kind": "amount_off", "value": 500, "min_spend_cents": 2000, "stock": 2,
		"grab_start_at": now.Add(-time.Minute).Format(time.RFC3339), "grab_end_at": now.Add(time.Hour).Format(time.RFC3339)}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range valid {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	a.wantError("POST", "/api/admin/coupons", "", valid, 401, "unauthorized")
	a.wantError("POST", "/api/admin/coupons", shopper, valid, 403, "forbidden")
	for name, body := range map[string]any{
		"not json":         `{"title":`,
		"stock as string":  with("stock", "ten"),
		"no stock":         with("stock", 0),
		"percent 100":      with("kind", "percent_off"),
		"unknown kind":     with("kind", "free_lunch"),
		"empty title":      with("title", ""),
		"end before start": with("grab_end_at", now.Add(-2*time.Minute).Format(time.RFC3339)),
		"bad time":         with("grab_start_at", "tomorrow"),
	} {
		body := body
		if name == "percent 100" {
			body = with("kind", "percent_off")
			body.(map[string]any)["value"] = 100
		}
		t.Run("create/"+name, func(t *testing.T) { a.wantError("POST", "/api/admin/coupons", merchant, body, 400, "invalid") })
	}
	var created struct{ Coupon couponJSON }
	if st := a.call("POST", "/api/admin/coupons", merchant, valid, &created); st != 201 {
		t.Fatalf("create: %d", st)
	}
	live := created.Coupon
	if live.Remaining != 2 || live.LimitPerUser != 1 || live.ValidDays != 7 || live.State != "live" || live.Title != "Five off" {
		t.Fatalf("created coupon = %+v", live)
	}

	// Reading.
	var list struct{ Coupons []couponJSON }
	if a.call("GET", "/api/coupons", "", nil, &list); len(list.Coupons) != 1 || list.Coupons[0].ID != live.ID {
		t.Fatalf("list = %+v", list)
	}
	a.wantError("GET", "/api/coupons/9999", "", nil, 404, "not_found")
	a.wantError("GET", "/api/coupons/abc", "", nil, 400, "invalid")

	// Grabbing.
	a.wantError("POST", fmt.Sprintf("/api/coupons/%d/grab", live.ID), "", nil, 401, "unauthorized")
	var grabbed struct {
		UserCoupon struct {
			ID         int64     `json:"id"`
			CouponID   int64     `json:"coupon_id"`
			Status     string    `json:"status"`
			ValidUntil time.Time `json:"valid_until"`
		} `json:"user_coupon"`
	}
	if st := a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", live.ID), shopper, nil, &grabbed); st != 201 {
		t.Fatalf("grab: %d", st)
	}
	if g := grabbed.UserCoupon; g.ID <= 0 || g.CouponID != live.ID || g.Status != "unused" || g.ValidUntil.Before(now.Add(6*24*time.Hour)) {
		t.Fatalf("grabbed = %+v", g)
	}
	a.wantError("POST", fmt.Sprintf("/api/coupons/%d/grab", live.ID), shopper, nil, 409, "limit_reached")
	second, _ := a.newUser()
	a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", live.ID), second, nil, nil)
	third, _ := a.newUser()
	a.wantError("POST", fmt.Sprintf("/api/coupons/%d/grab", live.ID), third, nil, 409, "sold_out")
	a.wantError("POST", "/api/coupons/9999/grab", shopper, nil, 404, "not_found")
	var mine struct {
		Coupons []struct {
			ID       int64 `json:"id"`
			CouponID int64 `json:"coupon_id"`
		}
	}
	eventually(t, 5*time.Second, "the grabbed coupon in my coupons", func() bool {
		a.call("GET", "/api/me/coupons", shopper, nil, &mine)
		return len(mine.Coupons) == 1 && mine.Coupons[0].ID == grabbed.UserCoupon.ID
	})

	upcoming := a.couponCreate(merchant, "Later", 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	a.wantError("POST", fmt.Sprintf("/api/coupons/%d/grab", upcoming.ID), shopper, nil, 409, "not_started")
	closing := a.couponCreate(merchant, "Closing", 10, 1, now.Add(-time.Minute), time.Now().Add(1500*time.Millisecond).Truncate(time.Second).Add(time.Second))
	time.Sleep(time.Until(closing.GrabEndAt) + 50*time.Millisecond)
	a.wantError("POST", fmt.Sprintf("/api/coupons/%d/grab", closing.ID), shopper, nil, 409, "ended")

	// Reminders: bad input changes nothing.
	path := fmt.Sprintf("/api/coupons/%d/reminders", upcoming.ID)
	rs := a.couponBook(shopper, upcoming.ID, 10, "app")
	if len(rs) != 1 || rs[0].MinutesBefore != 10 || rs[0].Channel != "app" || !rs[0].RemindAt.Equal(upcoming.GrabStartAt.Add(-10*time.Minute)) {
		t.Fatalf("reminders = %+v", rs)
	}
	for _, bad := range []struct {
		body   any
		status int
		code   string
	}{
		{map[string]any{"minutes_before": 0, "channel": "app"}, 400, "invalid"},
		{map[string]any{"minutes_before": 7, "channel": "app"}, 400, "invalid"},
		{map[string]any{"minutes_before": 65, "channel": "app"}, 400, "invalid"},
		{map[string]any{"minutes_before": 5, "channel": "carrier_pigeon"}, 400, "invalid"},
		{map[string]any{"minutes_before": "5", "channel": "app"}, 400, "invalid"},
		{`not json`, 400, "invalid"},
		{map[string]any{"minutes_before": 5, "channel": "sms"}, 409, "not_configured"},
		{map[string]any{"minutes_before": 5, "channel": "wechat"}, 409, "not_configured"},
		{map[string]any{"minutes_before": 5, "channel": "email"}, 409, "not_configured"},
		{map[string]any{"minutes_before": 5, "channel": "webhook"}, 409, "not_configured"},
	} {
		a.wantError("PUT", path, shopper, bad.body, bad.status, bad.code)
	}
	a.wantError("PUT", path, "", map[string]any{"minutes_before": 5, "channel": "app"}, 401, "unauthorized")
	a.wantError("PUT", "/api/coupons/9999/reminders", shopper, map[string]any{"minutes_before": 5, "channel": "app"}, 404, "not_found")
	soon := a.couponCreate(merchant, "Soon", 10, 1, now.Add(4*time.Minute), now.Add(time.Hour))
	a.wantError("PUT", fmt.Sprintf("/api/coupons/%d/reminders", soon.ID), shopper, map[string]any{"minutes_before": 5, "channel": "app"}, 409, "too_late")
	a.wantError("DELETE", path+"?minutes_before=abc&channel=app", shopper, nil, 400, "invalid")
	a.wantError("DELETE", path+"?minutes_before=5&channel=fax", shopper, nil, 400, "invalid")
	var all struct{ Reminders []reminderJSON }
	a.call("GET", "/api/me/reminders", shopper, nil, &all)
	if len(all.Reminders) != 1 || all.Reminders[0].CouponID != upcoming.ID || all.Reminders[0].MinutesBefore != 10 {
		t.Fatalf("after bad input, my reminders = %+v", all.Reminders)
	}
	a.couponBook(shopper, upcoming.ID, 60, "app")
	var left struct{ Reminders []reminderJSON }
	if st := a.call("DELETE", path+"?minutes_before=10&channel=app", shopper, nil, &left); st != 200 || len(left.Reminders) != 1 || left.Reminders[0].MinutesBefore != 60 {
		t.Fatalf("cancel: %d %+v", st, left.Reminders)
	}
	// email and webhook become bookable once the user has an address (webhook) and the server a mail relay (email).
	a.wantError("PUT", "/api/me/settings", shopper, map[string]string{"webhook_url": "http://127.0.0.1:9/hook"}, 400, "invalid")
	a.couponSettings(shopper, map[string]string{"email": "shopper@example.com", "webhook_url": "https://93.184.215.14/hook"})
	a.couponBook(shopper, upcoming.ID, 15, "webhook")
	a.wantError("PUT", path, shopper, map[string]any{"minutes_before": 15, "channel": "email"}, 409, "not_configured")

	// Merchant side: stats and moving the window, only for the owner.
	var stats struct {
		Remaining int64
		Grabbed   int64
		Bookings  []struct {
			MinutesBefore int    `json:"minutes_before"`
			Channel       string `json:"channel"`
			Count         int64  `json:"count"`
		}
	}
	if st := a.call("GET", fmt.Sprintf("/api/admin/coupons/%d/stats", upcoming.ID), merchant, nil, &stats); st != 200 || len(stats.Bookings) != 60 {
		t.Fatalf("stats: %d %+v", st, stats)
	}
	a.wantError("GET", fmt.Sprintf("/api/admin/coupons/%d/stats", upcoming.ID), other, nil, 404, "not_found")
	move := map[string]string{"grab_start_at": now.Add(5 * time.Hour).Format(time.RFC3339), "grab_end_at": now.Add(6 * time.Hour).Format(time.RFC3339)}
	a.wantError("PUT", fmt.Sprintf("/api/admin/coupons/%d", upcoming.ID), other, move, 404, "not_found")
	a.wantError("PUT", fmt.Sprintf("/api/admin/coupons/%d", upcoming.ID), merchant, map[string]string{"grab_start_at": move["grab_end_at"], "grab_end_at": move["grab_start_at"]}, 400, "invalid")
	var moved struct{ Coupon couponJSON }
	if st := a.call("PUT", fmt.Sprintf("/api/admin/coupons/%d", upcoming.ID), merchant, move, &moved); st != 200 || !moved.Coupon.GrabStartAt.Equal(now.Add(5*time.Hour).Truncate(time.Second)) {
		t.Fatalf("move: %d %+v", st, moved.Coupon)
	}
	a.call("GET", "/api/me/reminders", shopper, nil, &all)
	for _, r := range all.Reminders {
		if !r.RemindAt.Equal(moved.Coupon.GrabStartAt.Add(-time.Duration(r.MinutesBefore) * time.Minute)) {
			t.Fatalf("reminder %+v did not follow the new start %s", r, moved.Coupon.GrabStartAt)
		}
	}
	if n := a.couponInbox(shopper); len(n) != 0 {
		t.Fatalf("inbox before any reminder = %+v", n)
	}
}

// mailSink is an in-process SMTP server that hands each message to a channel.
type mailSink struct{ got chan string }

func (m *mailSink) NewSession(*smtp.Conn) (smtp.Session, error) { return &mailSession{sink: m}, nil }

type mailSession struct {
	sink *mailSink
	to   []string
}

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.sink.got <- "To: " + strings.Join(s.to, ",") + "\n" + string(b)
	return nil
}
func (s *mailSession) Reset()        { s.to = nil }
func (s *mailSession) Logout() error { return nil }

func startMailSink(t *testing.T) (*mailSink, string) {
	t.Helper()
	sink := &mailSink{got: make(chan string, 16)}
	srv := smtp.NewServer(sink)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sink, "smtp://" + ln.Addr().String() + "?from=reminders@seckill.test"
}

// webhookHit is one request a test webhook endpoint received.
type webhookHit struct {
	Body      []byte
	Signature string
	Type      string
	Status    int
}

// startWebhook serves an endpoint answering with status(n) for the n-th request (from 1).
func startWebhook(t *testing.T, status func(n int) int) (string, <-chan webhookHit) {
	t.Helper()
	hits := make(chan webhookHit, 64)
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		code := status(n)
		mu.Unlock()
		w.WriteHeader(code)
		hits <- webhookHit{Body: body, Signature: r.Header.Get("X-Seckill-Signature"), Type: r.Header.Get("Content-Type"), Status: code}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", hits
}

// A template starting in 5 minutes and a few seconds, booked at 5 minutes on
// app, email and webhook: a few seconds later the inbox row and the live
// push arrive, the mail reaches the SMTP server and the signed webhook the
// endpoint. A booking cancelled before then gets nothing.
func TestCouponRemindersEndToEnd(t *testing.T) {
	sink, smtpURL := startMailSink(t)
	hookURL, hits := startWebhook(t, func(int) int { return 200 })
	a := startApp(t, func(c *Config) {
		c.SMTPURL, c.WebhookAllowPrivate, c.WebhookSecret = smtpURL, true, "webhook-test-secret"
	})
	merchant, _ := a.newMerchant()
	alice, aliceID := a.newUser()
	bob, bobID := a.newUser()
	a.couponSettings(alice, map[string]string{"email": "alice@example.com", "webhook_url": hookURL})
	a.couponSettings(bob, map[string]string{"email": "bob@example.com", "webhook_url": hookURL})
	// carol reads the shop in Chinese: her reminder email is in Chinese.
	carolName, carol := a.register("carol")
	if st, _ := a.cookieLogin(carolName, "password123").postForm("/lang", url.Values{"lang": {"zh-CN"}}); st != 303 {
		t.Fatalf("carol's switch to Chinese: %d", st)
	}
	a.couponSettings(carol, map[string]string{"email": "carol@example.com"})

	start := time.Now().Add(5*time.Minute + 4*time.Second).Truncate(time.Second)
	c := a.couponCreate(merchant, "Spring ¥5 off", 100, 1, start, start.Add(time.Hour))
	live := a.couponLive(alice)
	for _, ch := range []string{"app", "email", "webhook"} {
		a.couponBook(alice, c.ID, 5, ch)
		a.couponBook(bob, c.ID, 5, ch)
	}
	a.couponBook(carol, c.ID, 5, "email")
	for _, ch := range []string{"app", "email", "webhook"} {
		a.call("DELETE", fmt.Sprintf("/api/coupons/%d/reminders?minutes_before=5&channel=%s", c.ID, ch), bob, nil, nil)
	}
	remindAt := start.Add(-5 * time.Minute)

	// Live push.
	deadline := time.After(time.Until(remindAt) + 10*time.Second)
	var pushed map[string]any
	for pushed == nil {
		select {
		case ev := <-live:
			if ev["type"] == "notification" {
				pushed = ev["notification"].(map[string]any)
			}
		case <-deadline:
			t.Fatal("no live notification within 10s of the remind time")
		}
	}
	if time.Now().Before(remindAt) {
		t.Fatalf("reminder pushed at %s, before its time %s", time.Now(), remindAt)
	}
	if pushed["coupon_id"] != float64(c.ID) || pushed["kind"] != "coupon_reminder" || !strings.Contains(pushed["message"].(string), c.Title) || pushed["read"] != false {
		t.Fatalf("pushed notification = %v", pushed)
	}
	// Inbox row.
	inbox := a.couponInbox(alice)
	if len(inbox) != 1 || inbox[0].CouponID != c.ID || float64(inbox[0].ID) != pushed["id"] {
		t.Fatalf("inbox = %+v", inbox)
	}
	var unread struct{ Unread int }
	if a.call("GET", "/api/me/notifications/unread", alice, nil, &unread); unread.Unread != 1 {
		t.Fatalf("unread = %d, want 1", unread.Unread)
	}
	// Mail: alice's in English, carol's in Chinese.
	mails := map[string]string{}
	for len(mails) < 2 {
		select {
		case msg := <-sink.got:
			to := regexp.MustCompile(`To: (\S+)`).FindStringSubmatch(msg)
			if to == nil {
				t.Fatalf("mail without a recipient:\n%s", msg)
			}
			mails[to[1]] = msg
		case <-time.After(10 * time.Second):
			t.Fatalf("reminder mails: %d of 2", len(mails))
		}
	}
	for to, msg := range mails {
		if !strings.Contains(msg, c.Title) || !strings.Contains(msg, start.UTC().Format(time.RFC3339)) {
			t.Fatalf("the mail to %s lacks the title or time:\n%s", to, msg)
		}
	}
	if msg := mails["alice@example.com"]; !strings.Contains(msg, "Grab it in the coupon centre.") {
		t.Fatalf("alice's mail, in English:\n%s", msg)
	}
	if msg := mails["carol@example.com"]; !strings.Contains(msg, "优惠券：") || !strings.Contains(msg, "请到领券中心领取。") || strings.Contains(msg, "Grab it") {
		t.Fatalf("carol's mail, in Chinese:\n%s", msg)
	}
	// Webhook.
	select {
	case hit := <-hits:
		mac := outbound.Sign([]byte("webhook-test-secret"), hit.Body)
		if !hmac.Equal([]byte(hit.Signature), []byte(mac)) || hit.Type != "application/json" {
			t.Fatalf("webhook signature %q (type %q), want %q", hit.Signature, hit.Type, mac)
		}
		var body struct {
			Type          string    `json:"type"`
			CouponID      int64     `json:"coupon_id"`
			Title         string    `json:"title"`
			GrabStartAt   time.Time `json:"grab_start_at"`
			MinutesBefore int       `json:"minutes_before"`
			UserID        int64     `json:"user_id"`
		}
		if err := json.Unmarshal(hit.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type != "coupon_reminder" || body.CouponID != c.ID || body.Title != c.Title || !body.GrabStartAt.Equal(start) || body.MinutesBefore != 5 || body.UserID != aliceID {
			t.Fatalf("webhook body = %s", hit.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook")
	}
	// Nothing for the cancelled booking, and nothing twice.
	time.Sleep(1500 * time.Millisecond)
	if n := a.couponInbox(bob); len(n) != 0 {
		t.Fatalf("bob cancelled but got %+v", n)
	}
	select {
	case msg := <-sink.got:
		t.Fatalf("a second mail went out:\n%s", msg)
	case hit := <-hits:
		t.Fatalf("a second webhook went out (bob is %d): %s", bobID, hit.Body)
	case ev := <-live:
		if ev["type"] == "notification" {
			t.Fatalf("a second live notification: %v", ev)
		}
	default:
	}
	var stats struct {
		Deliveries map[string]map[string]int64 `json:"deliveries"`
	}
	a.call("GET", fmt.Sprintf("/api/admin/coupons/%d/stats", c.ID), merchant, nil, &stats)
	for ch, want := range map[string]int64{"app": 1, "email": 2, "webhook": 1} { // alice's, and carol's email
		if stats.Deliveries[ch]["sent"] != want || len(stats.Deliveries[ch]) != 1 {
			t.Errorf("%s deliveries = %v, want %d sent", ch, stats.Deliveries[ch], want)
		}
	}
}

// A webhook endpoint answering 500 twice then 200 gets the reminder once,
// after retries; a healthy endpoint in the same fan-out is not held up by it:
// the failing endpoint's first answer waits until the healthy one was served.
func TestCouponWebhookRetries(t *testing.T) {
	healthyURL, healthy := startWebhook(t, func(int) int { return 200 })
	served := make(chan struct{})
	var once sync.Once
	go func() {
		<-healthy
		once.Do(func() { close(served) })
	}()
	failingHits := make(chan webhookHit, 16)
	var mu sync.Mutex
	var heldUp atomic.Bool
	calls := 0
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			select { // the first attempt hangs until the other endpoint has its reminder
			case <-served:
			case <-time.After(4 * time.Second):
				heldUp.Store(true)
			}
		}
		code := 200
		if n <= 2 {
			code = 500
		}
		w.WriteHeader(code)
		failingHits <- webhookHit{Body: body, Signature: r.Header.Get("X-Seckill-Signature"), Status: code}
	}))
	t.Cleanup(failing.Close)

	a := startApp(t, func(c *Config) {
		c.WebhookAllowPrivate, c.ReminderRetryDelay = true, 100*time.Millisecond
	})
	merchant, _ := a.newMerchant()
	flaky, flakyID := a.newUser() // registered first: its booking comes first in the fan-out
	fine, _ := a.newUser()
	a.couponSettings(flaky, map[string]string{"webhook_url": failing.URL + "/hook"})
	a.couponSettings(fine, map[string]string{"webhook_url": healthyURL})
	start := time.Now().Add(5*time.Minute + 4*time.Second).Truncate(time.Second)
	c := a.couponCreate(merchant, "Flaky", 10, 1, start, start.Add(time.Hour))
	a.couponBook(flaky, c.ID, 5, "webhook")
	a.couponBook(fine, c.ID, 5, "webhook")

	var got []webhookHit
	timeout := time.After(time.Until(start.Add(-5*time.Minute)) + 20*time.Second)
	for len(got) < 3 {
		select {
		case hit := <-failingHits:
			got = append(got, hit)
		case <-timeout:
			t.Fatalf("failing endpoint saw %d requests, want 3", len(got))
		}
	}
	if heldUp.Load() {
		t.Fatal("the healthy endpoint waited for the failing one")
	}
	if got[0].Status != 500 || got[1].Status != 500 || got[2].Status != 200 {
		t.Fatalf("answers = %d %d %d", got[0].Status, got[1].Status, got[2].Status)
	}
	for _, h := range got {
		if h.Signature != outbound.Sign(a.Coupons.WebhookSecret, h.Body) || !strings.Contains(string(h.Body), fmt.Sprintf(`"user_id":%d`, flakyID)) {
			t.Fatalf("retry carried a different body or signature: %s %s", h.Signature, h.Body)
		}
	}
	// Delivered once: no further requests, and recorded as sent after three attempts.
	var stats struct {
		Deliveries map[string]map[string]int64 `json:"deliveries"`
	}
	eventually(t, 5*time.Second, "the webhook delivery recorded as sent", func() bool {
		a.call("GET", fmt.Sprintf("/api/admin/coupons/%d/stats", c.ID), merchant, nil, &stats)
		return stats.Deliveries["webhook"]["sent"] == 2
	})
	var attempts int
	a.SQL.R.QueryRow(`SELECT attempts FROM reminder_deliveries WHERE user_id = ? AND channel = 'webhook'`, flakyID).Scan(&attempts)
	if attempts != 3 {
		t.Fatalf("recorded %d attempts, want 3", attempts)
	}
	select {
	case h := <-failingHits:
		t.Fatalf("a fourth request after success: %d %s", h.Status, h.Body)
	case <-time.After(time.Second):
	}
}

// templateRedis is a copy of every Redis key of one template (strings and
// hashes: its stock, limits and per-user counts), as a backup holds them.
type templateRedis struct {
	strings map[string]string
	hashes  map[string]map[string]string
}

func (a *testApp) templateKeys(couponID int64) []string {
	a.T.Helper()
	keys, err := rdb.Keys(context.Background(), a.Redis.Client, fmt.Sprintf("{coupon:%d}*", couponID))
	if err != nil {
		a.T.Fatal(err)
	}
	return keys
}

// backupTemplate copies the template's keys as a Redis backup would.
func (a *testApp) backupTemplate(couponID int64) *templateRedis {
	a.T.Helper()
	ctx, rc := context.Background(), a.Redis.Client
	b := &templateRedis{strings: map[string]string{}, hashes: map[string]map[string]string{}}
	for _, k := range a.templateKeys(couponID) {
		switch rc.Type(ctx, k).Val() {
		case "string":
			b.strings[k] = rc.Get(ctx, k).Val()
		case "hash":
			b.hashes[k] = rc.HGetAll(ctx, k).Val()
		}
	}
	return b
}

// restoreTemplate puts the template's keys back as the backup had them.
func (a *testApp) restoreTemplate(couponID int64, b *templateRedis) {
	a.T.Helper()
	ctx, rc := context.Background(), a.Redis.Client
	pipe := rc.TxPipeline()
	if keys := a.templateKeys(couponID); len(keys) > 0 {
		pipe.Del(ctx, keys...)
	}
	for k, v := range b.strings {
		pipe.Set(ctx, k, v, 0)
	}
	for k, v := range b.hashes {
		pipe.HSet(ctx, k, v)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		a.T.Fatal(err)
	}
}

// Redis restored from a backup taken before the only coupon was grabbed
// sells it again: bob's grab answers 201, but the flush refuses it. SQLite
// keeps alice's coupon alone, bob's socket hears of the failure at once and
// his coupon list and inbox show it.
func TestCouponStaleRestoreTellsTheUser(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	alice, _ := a.newUser()
	bob, _ := a.newUser()
	now := time.Now()
	c := a.couponCreate(merchant, "Only one", 1, 1, now.Add(-time.Minute), now.Add(time.Hour))
	backup := a.backupTemplate(c.ID)

	type grabJSON struct {
		UserCoupon struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		} `json:"user_coupon"`
	}
	type mineJSON struct {
		Coupons []struct {
			ID       int64  `json:"id"`
			CouponID int64  `json:"coupon_id"`
			Status   string `json:"status"`
		}
	}
	var first, second grabJSON
	if st := a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", c.ID), alice, nil, &first); st != 201 {
		t.Fatalf("alice's grab: %d", st)
	}
	var mine mineJSON
	eventually(t, 5*time.Second, "alice's coupon in SQLite", func() bool {
		a.call("GET", "/api/me/coupons", alice, nil, &mine)
		return len(mine.Coupons) == 1
	})
	a.restoreTemplate(c.ID, backup)

	live := a.couponLive(bob)
	if st := a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", c.ID), bob, nil, &second); st != 201 || second.UserCoupon.ID != first.UserCoupon.ID {
		t.Fatalf("bob's grab after the restore: %d %+v, want 201 with alice's unit %d", st, second.UserCoupon, first.UserCoupon.ID)
	}
	deadline := time.After(10 * time.Second)
	var told, listed bool
	for !told || !listed {
		select {
		case ev := <-live:
			if ev["type"] == "user_coupon" {
				uc, _ := ev["user_coupon"].(map[string]any)
				listed = uc["id"] == float64(second.UserCoupon.ID) && uc["status"] == "failed"
			}
			if ev["type"] == "notification" {
				n, _ := ev["notification"].(map[string]any)
				told = n["kind"] == "coupon_failed" && n["coupon_id"] == float64(c.ID)
			}
		case <-deadline:
			t.Fatalf("bob's socket: failed coupon event %v, notification %v; want both", listed, told)
		}
	}
	a.call("GET", "/api/me/coupons", bob, nil, &mine)
	if len(mine.Coupons) != 1 || mine.Coupons[0].ID != second.UserCoupon.ID || mine.Coupons[0].Status != "failed" {
		t.Fatalf("bob's coupons = %+v, want his grab as failed", mine.Coupons)
	}
	if st, page := a.getPage(bob, "/me/coupons"); st != 200 || !strings.Contains(page, fmt.Sprintf(`data-user-coupon="%d"`, second.UserCoupon.ID)) ||
		!strings.Contains(page, `class="badge failed" data-user-coupon-status>Failed<`) {
		t.Fatalf("bob's My coupons page (%d) does not show his grab failed", st)
	}
	if inbox := a.couponInbox(bob); len(inbox) != 1 || inbox[0].Kind != "coupon_failed" || !strings.Contains(inbox[0].Message, c.Title) {
		t.Fatalf("bob's inbox = %+v", inbox)
	}
	a.call("GET", "/api/me/coupons", alice, nil, &mine)
	if len(mine.Coupons) != 1 || mine.Coupons[0].Status != "unused" {
		t.Fatalf("alice's coupons = %+v, want hers unused", mine.Coupons)
	}
	var held int
	a.SQL.R.QueryRow(`SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID).Scan(&held)
	if held != 1 {
		t.Fatalf("SQLite holds %d coupons of a stock of 1", held)
	}
}
