package coupon_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

// countingServer is an endpoint that answers 200 and counts its requests.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// bookWebhooks stores each URL as a new user's webhook straight in SQLite,
// as a row saved before the rule changed or whose name resolved elsewhere
// then, and books the user's 5-minute webhook reminder on c.
func bookWebhooks(t *testing.T, cs *testService, c *model.Coupon, urls []string) []int64 {
	t.Helper()
	users := cs.users(t, "hook", len(urls))
	for i, u := range urls {
		if _, err := cs.SQL.W.Exec(`UPDATE users SET webhook_url = ? WHERE id = ?`, u, users[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Book(context.Background(), users[i], c.ID, 5, model.ChannelWebhook); err != nil {
			t.Fatalf("book %s: %v", u, err)
		}
	}
	return users
}

// deliveryOf returns the status, attempts and last error of the user's webhook delivery on c.
func deliveryOf(t *testing.T, cs *testService, c *model.Coupon, uid int64) (status string, attempts int, lastErr string) {
	t.Helper()
	err := cs.SQL.R.QueryRow(`SELECT status, attempts, COALESCE(last_error, '') FROM reminder_deliveries
		WHERE template_id = ? AND channel = 'webhook' AND user_id = ?`, c.ID, uid).Scan(&status, &attempts, &lastErr)
	if err != nil {
		t.Fatalf("delivery of user %d: %v", uid, err)
	}
	return status, attempts, lastErr
}

// A webhook URL that got past the check when it was saved (an old row, or a
// name that resolved to a public address then and to an internal one now)
// is refused when the reminder connects: the endpoint gets nothing and the
// delivery fails for good on its first attempt instead of being retried.
func TestWebhookSSRFRefusedAtSendTime(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	srv, hits := countingServer(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	urls := []string{
		"http://localhost:" + port + "/hook", // a name resolving to loopback, where the server listens
		srv.URL + "/hook",
		"http://[::ffff:127.0.0.1]:" + port + "/hook",
		"http://100.100.100.200/latest/meta-data/",
		"http://100.64.0.1/hook",
		"http://198.18.0.1/hook",
		"http://255.255.255.255/hook",
		"http://[::127.0.0.1]:" + port + "/hook",
		"http://[64:ff9b::a9fe:a9fe]/hook",
	}
	users := bookWebhooks(t, cs, c, urls)
	if err := cs.SendReminders(ctx, tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}); err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback endpoint got %d requests, want 0", n)
	}
	for i, uid := range users {
		status, attempts, lastErr := deliveryOf(t, cs, c, uid)
		if status != "failed" || attempts != 1 || !strings.Contains(lastErr, "not a global unicast address") {
			t.Errorf("%s: delivery %s after %d attempts (%s), want failed after 1 as not a global address", urls[i], status, attempts, lastErr)
		}
	}
}

// The same loopback endpoint is reached when private addresses are allowed,
// so the test above fails for the rule and not for the endpoint.
func TestWebhookSSRFAllowPrivateReachesLoopback(t *testing.T) {
	cs := newService(t)
	cs.WebhookAllowPrivate = true
	cs.WebhookSecret = []byte("k")
	srv, hits := countingServer(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := bookWebhooks(t, cs, c, []string{"http://localhost:" + port + "/hook"})
	if err := cs.SendReminders(context.Background(), tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}); err != nil {
		t.Fatal(err)
	}
	if status, _, lastErr := deliveryOf(t, cs, c, users[0]); status != "sent" || hits.Load() != 1 {
		t.Fatalf("delivery %s (%s), %d requests; want sent, 1", status, lastErr, hits.Load())
	}
}

// A webhook endpoint answering with a redirect does not send the reminder
// on: the target of the redirect gets nothing, and the delivery fails for good.
func TestWebhookSSRFNoRedirect(t *testing.T) {
	cs := newService(t)
	cs.WebhookAllowPrivate = true // both endpoints listen on loopback
	target, targetHits := countingServer(t)
	var redirects atomic.Int64
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirects.Add(1)
		http.Redirect(w, r, target.URL+"/stolen", http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	now := time.Now()
	c := cs.create(t, 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	users := bookWebhooks(t, cs, c, []string{redirector.URL + "/hook"})
	if err := cs.SendReminders(context.Background(), tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: c.GrabStartAt, MinutesBefore: 5}); err != nil {
		t.Fatal(err)
	}
	if redirects.Load() != 1 || targetHits.Load() != 0 {
		t.Fatalf("redirector got %d requests, its target %d; want 1 and 0", redirects.Load(), targetHits.Load())
	}
	if status, attempts, lastErr := deliveryOf(t, cs, c, users[0]); status != "failed" || attempts != 1 || !strings.Contains(lastErr, "302") {
		t.Fatalf("delivery %s after %d attempts (%s), want failed after 1 on the 302", status, attempts, lastErr)
	}
}
