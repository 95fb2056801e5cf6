package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/tasks"
)

type rpJSON struct {
	ID             int64     `json:"id"`
	Title          string    `json:"title"`
	TotalCents     int64     `json:"total_cents"`
	Count          int64     `json:"count"`
	Mode           string    `json:"mode"`
	RemainingCount int64     `json:"remaining_count"`
	RemainingCents int64     `json:"remaining_cents"`
	Status         string    `json:"status"`
	ExpiresAt      time.Time `json:"expires_at"`
}

type rpGrabJSON struct {
	RedPacketID int64     `json:"redpacket_id"`
	AmountCents int64     `json:"amount_cents"`
	GrabbedAt   time.Time `json:"grabbed_at"`
}

type rpGrabsJSON struct {
	Grabs []struct {
		UserID      int64     `json:"user_id"`
		Username    string    `json:"username"`
		AmountCents int64     `json:"amount_cents"`
		GrabbedAt   time.Time `json:"grabbed_at"`
	} `json:"grabs"`
	LuckiestUserID *int64 `json:"luckiest_user_id"`
}

type rpStatsJSON struct {
	Count          int64 `json:"count"`
	Claimed        int64 `json:"claimed"`
	Flushed        int64 `json:"flushed"`
	RemainingCount int64 `json:"remaining_count"`
	RemainingCents int64 `json:"remaining_cents"`
	RefundedCents  int64 `json:"refunded_cents"`
}

// createRedPacket has the merchant create a packet and fails unless it is created.
func (a *testApp) createRedPacket(token string, body map[string]any) rpJSON {
	a.T.Helper()
	var out struct{ Redpacket rpJSON }
	if st := a.call("POST", "/api/admin/redpackets", token, body, &out); st != http.StatusCreated {
		a.T.Fatalf("create red packet %v: %d", body, st)
	}
	return out.Redpacket
}

func (a *testApp) grabRedPacket(token string, id int64) rpGrabJSON {
	a.T.Helper()
	var out struct{ Grab rpGrabJSON }
	if st := a.call("POST", fmt.Sprintf("/api/redpackets/%d/grab", id), token, nil, &out); st != http.StatusCreated {
		a.T.Fatalf("grab red packet %d: %d", id, st)
	}
	return out.Grab
}

func (a *testApp) redPacket(id int64) rpJSON {
	a.T.Helper()
	var out struct{ Redpacket rpJSON }
	if st := a.call("GET", fmt.Sprintf("/api/redpackets/%d", id), "", nil, &out); st != http.StatusOK {
		a.T.Fatalf("get red packet %d: %d", id, st)
	}
	return out.Redpacket
}

func (a *testApp) redPacketStats(token string, id int64) rpStatsJSON {
	a.T.Helper()
	var out rpStatsJSON
	if st := a.call("GET", fmt.Sprintf("/api/admin/redpackets/%d/stats", id), token, nil, &out); st != http.StatusOK {
		a.T.Fatalf("stats of red packet %d: %d", id, st)
	}
	return out
}

// redPacketRows counts packets and shares in SQLite, to prove a refusal changed nothing.
func (a *testApp) redPacketRows() (packets, shares, claimed int) {
	a.T.Helper()
	err := a.SQL.R.QueryRow(`SELECT (SELECT COUNT(*) FROM redpackets), (SELECT COUNT(*) FROM redpacket_shares), (SELECT COUNT(*) FROM redpacket_shares WHERE user_id IS NOT NULL)`).
		Scan(&packets, &shares, &claimed)
	if err != nil {
		a.T.Fatal(err)
	}
	return
}

// The whole contract of a packet's life: create, read, list, grab, grabs, stats.
func TestRedPacketAPI(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	p := a.createRedPacket(merchant, map[string]any{"title": "Lunar new year", "total_cents": 10000, "count": 3, "mode": "random", "expires_in": "1h"})
	if p.ID <= 0 || p.Title != "Lunar new year" || p.TotalCents != 10000 || p.Count != 3 || p.Mode != "random" ||
		p.RemainingCount != 3 || p.RemainingCents != 10000 || p.Status != "active" {
		t.Fatalf("created %+v", p)
	}
	if d := time.Until(p.ExpiresAt); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("expires_at %s is not an hour away", p.ExpiresAt)
	}
	def := a.createRedPacket(merchant, map[string]any{"title": "default expiry", "total_cents": 100, "count": 1, "mode": "fixed"})
	if d := time.Until(def.ExpiresAt); d < 23*time.Hour || d > 24*time.Hour {
		t.Fatalf("expires_in left out: expires_at %s, want 24h away", def.ExpiresAt)
	}
	var list struct{ Redpackets []rpJSON }
	if st := a.call("GET", "/api/redpackets", "", nil, &list); st != 200 || len(list.Redpackets) != 2 {
		t.Fatalf("active list: %d %+v", st, list)
	}

	userA, idA := a.newUser()
	userB, idB := a.newUser()
	gA := a.grabRedPacket(userA, p.ID)
	gB := a.grabRedPacket(userB, p.ID)
	if gA.RedPacketID != p.ID || gA.AmountCents < 1 || time.Since(gA.GrabbedAt) > time.Minute {
		t.Fatalf("grab %+v", gA)
	}
	after := a.redPacket(p.ID)
	if after.RemainingCount != 1 || after.RemainingCents != 10000-gA.AmountCents-gB.AmountCents {
		t.Fatalf("after two grabs %+v (grabs %d, %d)", after, gA.AmountCents, gB.AmountCents)
	}

	var grabs rpGrabsJSON
	if st := a.call("GET", fmt.Sprintf("/api/redpackets/%d/grabs", p.ID), "", nil, &grabs); st != 200 || len(grabs.Grabs) != 2 {
		t.Fatalf("grabs: %d %+v", st, grabs)
	}
	if g := grabs.Grabs[0]; g.UserID != idA || g.AmountCents != gA.AmountCents || !strings.HasPrefix(g.Username, "u") {
		t.Fatalf("first grab %+v, want user %d with %d", g, idA, gA.AmountCents)
	}
	wantLucky := idA
	if gB.AmountCents > gA.AmountCents {
		wantLucky = idB
	}
	if gA.AmountCents == gB.AmountCents { // equal shares name no luckiest
		if grabs.LuckiestUserID != nil {
			t.Fatalf("luckiest %v among equal shares, want none", *grabs.LuckiestUserID)
		}
	} else if grabs.LuckiestUserID == nil || *grabs.LuckiestUserID != wantLucky {
		t.Fatalf("luckiest %v, want %d", grabs.LuckiestUserID, wantLucky)
	}

	eventually(t, 5*time.Second, "the flush", func() bool { return a.redPacketStats(merchant, p.ID).Flushed == 2 })
	st := a.redPacketStats(merchant, p.ID)
	if st != (rpStatsJSON{Count: 3, Claimed: 2, Flushed: 2, RemainingCount: 1, RemainingCents: after.RemainingCents}) {
		t.Fatalf("stats %+v", st)
	}
	if st := a.redPacketStats(a.adminToken(), p.ID); st.Claimed != 2 {
		t.Fatalf("admin sees stats %+v", st)
	}

	// Who may do what.
	other, _ := a.newMerchant()
	a.wantError("GET", fmt.Sprintf("/api/admin/redpackets/%d/stats", p.ID), other, nil, 404, "not_found")
	a.wantError("GET", fmt.Sprintf("/api/admin/redpackets/%d/stats", p.ID), userA, nil, 403, "forbidden")
	a.wantError("POST", "/api/admin/redpackets", userA, map[string]any{"title": "x", "total_cents": 100, "count": 1, "mode": "fixed"}, 403, "forbidden")
	a.wantError("POST", fmt.Sprintf("/api/redpackets/%d/grab", p.ID), "", nil, 401, "unauthorized")
	a.wantError("GET", "/api/redpackets/999999", "", nil, 404, "not_found")
	a.wantError("POST", "/api/redpackets/999999/grab", userA, nil, 404, "not_found")
	a.wantError("GET", "/api/redpackets/abc", "", nil, 400, "invalid")
	var mine struct{ Redpackets []rpJSON }
	if a.call("GET", "/api/admin/redpackets", other, nil, &mine); len(mine.Redpackets) != 0 {
		t.Fatalf("another merchant lists %d packets", len(mine.Redpackets))
	}
	if pk, _, _ := a.redPacketRows(); pk != 2 {
		t.Fatalf("%d packets in SQLite, want 2", pk)
	}
}

// Every kind of bad input is a 400 invalid that creates nothing.
func TestRedPacketCreateBadInput(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	ok := map[string]any{"title": "ok", "total_cents": 1000, "count": 10, "mode": "random", "expires_in": "1h"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range ok {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name string
		body any
	}{
		{"count zero", with("count", 0)},
		{"count negative", with("count", -5)},
		{"count missing", with("count", nil)},
		{"count over 100,000", map[string]any{"title": "big", "total_cents": 10_000_000, "count": 100_001, "mode": "random"}},
		{"count not a number", with("count", "ten")},
		{"count fractional", with("count", 2.5)},
		{"random with total below count", with("total_cents", 9)},
		{"total zero", with("total_cents", 0)},
		{"total negative", with("total_cents", -100)},
		{"fixed not divisible", map[string]any{"title": "f", "total_cents": 1001, "count": 10, "mode": "fixed"}},
		{"unknown mode", with("mode", "lucky")},
		{"mode missing", with("mode", nil)},
		{"expires_in not a duration", with("expires_in", "tomorrow")},
		{"expires_in negative", with("expires_in", "-5m")},
		{"expires_in zero", with("expires_in", "0s")},
		{"expires_in a number", with("expires_in", 3600)},
		{"expires_in too long", with("expires_in", "9999h")},
		{"title missing", with("title", nil)},
		{"title too long", with("title", strings.Repeat("x", 101))},
		{"not JSON", "{nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := *a.App // the same process, failing this subtest
			rig.T = t
			sub := testApp{App: &rig}
			sub.wantError("POST", "/api/admin/redpackets", merchant, tc.body, 400, "invalid")
		})
	}
	if pk, sh, _ := a.redPacketRows(); pk != 0 || sh != 0 {
		t.Fatalf("refused creations left %d packets and %d shares", pk, sh)
	}
	if n, _ := rdb.Keys(context.Background(), a.Redis.Client, "{redpacket:*"); len(n) != 0 {
		t.Fatalf("refused creations left redis keys %v", n)
	}
	// The boundary itself is fine.
	if p := a.createRedPacket(merchant, map[string]any{"title": "max", "total_cents": 100_000, "count": 100_000, "mode": "fixed", "expires_in": "720h"}); p.Count != 100_000 {
		t.Fatalf("max packet %+v", p)
	}
}

// already_grabbed, sold_out and expired refusals change nothing.
func TestRedPacketGrabRefusals(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	p := a.createRedPacket(merchant, map[string]any{"title": "one", "total_cents": 500, "count": 1, "mode": "fixed"})
	first, _ := a.newUser()
	second, _ := a.newUser()
	if g := a.grabRedPacket(first, p.ID); g.AmountCents != 500 {
		t.Fatalf("the only share: %+v", g)
	}
	eventually(t, 5*time.Second, "the flush", func() bool { return a.redPacket(p.ID).Status == "finished" })
	before := a.redPacketStats(merchant, p.ID)
	a.wantError("POST", fmt.Sprintf("/api/redpackets/%d/grab", p.ID), first, nil, 409, "already_grabbed")
	a.wantError("POST", fmt.Sprintf("/api/redpackets/%d/grab", p.ID), second, nil, 409, "sold_out")
	if after := a.redPacketStats(merchant, p.ID); after != before {
		t.Fatalf("refused grabs changed the stats: %+v → %+v", before, after)
	}
	if _, _, claimed := a.redPacketRows(); claimed != 1 {
		t.Fatalf("%d claims in SQLite, want 1", claimed)
	}

	short := a.createRedPacket(merchant, map[string]any{"title": "short", "total_cents": 300, "count": 3, "mode": "random", "expires_in": "1s"})
	time.Sleep(time.Until(short.ExpiresAt) + 50*time.Millisecond)
	before = a.redPacketStats(merchant, short.ID)
	a.wantError("POST", fmt.Sprintf("/api/redpackets/%d/grab", short.ID), second, nil, 409, "expired")
	if after := a.redPacketStats(merchant, short.ID); after.Claimed != 0 || after.Claimed != before.Claimed {
		t.Fatalf("the refused grab changed the stats: %+v → %+v", before, after)
	}
	if got := a.redPacket(short.ID); got.Status != "expired" {
		t.Fatalf("past expiry: status %q, want expired", got.Status)
	}
}

// The expiry task runs at expires_at through the real worker: unclaimed
// shares are refunded and refunded + claimed == total.
func TestRedPacketExpiryTask(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	const total = 7777
	p := a.createRedPacket(merchant, map[string]any{"title": "short", "total_cents": total, "count": 7, "mode": "random", "expires_in": "1h"})
	var claimed int64
	for i := 0; i < 3; i++ {
		tok, _ := a.newUser()
		claimed += a.grabRedPacket(tok, p.ID).AmountCents
	}
	// Past its expiry on the server's clock, the task scheduled for it runs
	// now (a busy machine takes as long as it takes to grab first).
	a.Clock.Advance(time.Hour + time.Minute)
	if err := a.Inspector.RunTask(tasks.QueueCritical, fmt.Sprintf("redpacket:expire:%d", p.ID)); err != nil {
		t.Fatalf("run the packet's expiry task: %v", err)
	}
	eventually(t, 15*time.Second, "the expiry task", func() bool { return a.redPacketStats(merchant, p.ID).RefundedCents > 0 })
	eventually(t, 5*time.Second, "the flush", func() bool { return a.redPacketStats(merchant, p.ID).Flushed == 3 })
	st := a.redPacketStats(merchant, p.ID)
	if st.RefundedCents+claimed != total || st.RemainingCount != 0 || st.RemainingCents != 0 || st.Claimed != 3 {
		t.Fatalf("stats %+v with %d claimed, want refunded + claimed == %d and nothing left", st, claimed, total)
	}
	if got := a.redPacket(p.ID); got.Status != "expired" {
		t.Fatalf("status %q, want expired", got.Status)
	}
	var active struct{ Redpackets []rpJSON }
	if a.call("GET", "/api/redpackets", "", nil, &active); len(active.Redpackets) != 0 {
		t.Fatalf("expired packet still listed: %+v", active)
	}
}

// The last share claimed and flushed makes the packet finished.
func TestRedPacketFinishes(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	p := a.createRedPacket(merchant, map[string]any{"title": "four", "total_cents": 400, "count": 4, "mode": "fixed"})
	for i := 0; i < 4; i++ {
		tok, _ := a.newUser()
		a.grabRedPacket(tok, p.ID)
	}
	eventually(t, 5*time.Second, "finished", func() bool { return a.redPacket(p.ID).Status == "finished" })
	if st := a.redPacketStats(merchant, p.ID); st != (rpStatsJSON{Count: 4, Claimed: 4, Flushed: 4}) {
		t.Fatalf("stats %+v", st)
	}
}

// A grab pushes {"type":"redpacket","redpacket_id":ID,"remaining_count":N} to watchers.
func TestRedPacketLiveEvent(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	p := a.createRedPacket(merchant, map[string]any{"title": "live", "total_cents": 300, "count": 3, "mode": "fixed"})
	ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(a.URL, "http", "ws", 1)+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteJSON(map[string]string{"op": "subscribe", "topic": fmt.Sprintf("redpacket:%d", p.ID)})
	ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ack map[string]any
	if err := ws.ReadJSON(&ack); err != nil || ack["type"] != "subscribed" {
		t.Fatalf("subscribe: %v %v", ack, err)
	}
	tok, _ := a.newUser()
	a.grabRedPacket(tok, p.ID)
	_, raw, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	json.Unmarshal(raw, &ev)
	want := map[string]any{"type": "redpacket", "redpacket_id": float64(p.ID), "remaining_count": float64(2)}
	if fmt.Sprint(ev) != fmt.Sprint(want) {
		t.Fatalf("event %s, want %v", raw, want)
	}
}

// DEMO seeds one active packet a new user can open, and a restart (with an
// empty Redis, as an embedded one would be) keeps it openable without adding another.
func TestRedPacketDemo(t *testing.T) {
	dbPath := t.TempDir() + "/demo.db"
	demo := func(c *Config) { c.Demo, c.DBPath = true, dbPath }
	a := startApp(t, demo)
	var list struct{ Redpackets []rpJSON }
	a.call("GET", "/api/redpackets", "", nil, &list)
	if len(list.Redpackets) != 1 || list.Redpackets[0].Status != "active" {
		t.Fatalf("demo packets %+v, want one active", list)
	}
	id := list.Redpackets[0].ID
	tok, _ := a.newUser()
	a.grabRedPacket(tok, id)
	eventually(t, 5*time.Second, "the flush", func() bool { _, _, c := a.redPacketRows(); return c == 1 })

	// A second process on the same database (the same file, or the same
	// PostgreSQL database) with its own, empty Redis.
	b := startApp(t, demo, func(c *Config) { c.DatabaseURL = a.Config.DatabaseURL })
	b.call("GET", "/api/redpackets", "", nil, &list)
	if len(list.Redpackets) != 1 || list.Redpackets[0].ID != id || list.Redpackets[0].RemainingCount != 19 {
		t.Fatalf("after restart: %+v, want the same packet with 19 left", list)
	}
	tok2, _ := b.newUser()
	b.grabRedPacket(tok2, id)
}

// rpBrowserLogin logs in through the form, also when someone else is logged
// in already, by waiting for the new name rather than any name.
func rpBrowserLogin(ctx context.Context, base, username, password string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(base + "/login"),
		chromedp.WaitVisible(`[data-testid=login-form]`),
		chromedp.SendKeys(`[data-testid=login-username]`, username),
		chromedp.SendKeys(`[data-testid=login-password]`, password),
		chromedp.Click(`[data-testid=login-submit]`),
		// The login page itself shows whoever was logged in; the welcome flash is on the page after.
		chromedp.WaitVisible(`[data-testid=flash]`),
	}
}

// A merchant creates a packet in the browser (with inline validation on the
// way); a shopper opens it, sees the amount at once, and sees another
// shopper's grab appear in the list live, the luckiest marked.
func TestRedPacketBrowser(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	merchantName := fmt.Sprintf("rpm%d", time.Now().UnixNano()%1e6)
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": merchantName, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	shopperName := fmt.Sprintf("rps%d", time.Now().UnixNano()%1e6)
	var shopper authAnswer
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": shopperName, "password": "password123"}, &shopper); st != 201 {
		t.Fatalf("register shopper: %d", st)
	}

	var fixedErr, location string
	err := chromedp.Run(ctx,
		browserLogin(ctx, a.URL, merchantName, "password123"),
		chromedp.Navigate(a.URL+"/admin/redpackets"),
		chromedp.WaitVisible(`[data-testid=rp-form]`),
		chromedp.SendKeys(`[data-testid=rp-title]`, "Browser packet"),
		chromedp.SendKeys(`[data-testid=rp-total]`, "10.01"),
		chromedp.SendKeys(`[data-testid=rp-count]`, "3"),
		chromedp.SetValue(`[data-testid=rp-mode]`, "fixed"),
		chromedp.Evaluate(`document.querySelector('[data-testid=rp-mode]').dispatchEvent(new Event('input', {bubbles: true}))`, nil),
		chromedp.Text(`[data-testid=rp-error-total]`, &fixedErr),
		chromedp.SetValue(`[data-testid=rp-mode]`, "random"),
		chromedp.Evaluate(`document.querySelector('[data-testid=rp-mode]').dispatchEvent(new Event('input', {bubbles: true}))`, nil),
		chromedp.Click(`[data-testid=rp-submit]`),
		chromedp.WaitVisible(`[data-testid=admin-redpacket]`),
		chromedp.Location(&location),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fixedErr, "divisible") {
		t.Fatalf("inline error for a fixed total of 10.01 over 3: %q", fixedErr)
	}
	var id int64
	if _, err := fmt.Sscanf(location[strings.LastIndex(location, "/")+1:], "%d", &id); err != nil || id == 0 {
		t.Fatalf("created packet page %q", location)
	}
	if p := a.redPacket(id); p.TotalCents != 1001 || p.Count != 3 || p.Mode != "random" {
		t.Fatalf("created %+v", p)
	}

	var amount, claimedAdmin string
	err = chromedp.Run(ctx,
		chromedp.Navigate(a.URL+"/redpackets"),
		chromedp.WaitVisible(`[data-testid=rp-card]`),
		rpBrowserLogin(ctx, a.URL, shopperName, "password123"),
		chromedp.Navigate(fmt.Sprintf("%s/redpackets/%d", a.URL, id)),
		chromedp.WaitVisible(`[data-testid=rp-open]`),
		chromedp.WaitVisible(`[data-testid=redpacket][data-rp-live=on]`),
		chromedp.Click(`[data-testid=rp-open]`),
		chromedp.WaitVisible(`[data-testid=rp-won]`),
		chromedp.Text(`[data-testid=rp-won]`, &amount),
		chromedp.WaitVisible(`[data-testid=rp-grab][data-user-id]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	// Another shopper grabs through the API; the open page's list updates live.
	other, otherID := a.newUser()
	g := a.grabRedPacket(other, id)
	var items int
	var lucky, remaining string
	err = chromedp.Run(ctx,
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=rp-grab][data-user-id="%d"]`, otherID)),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid=rp-grab]').length`, &items),
		chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=rp-luckiest]')].map((b) => b.closest('li').dataset.userId).join(',')`, &lucky),
		chromedp.Poll(`document.querySelector('[data-testid=rp-remaining]').textContent === "1"`, nil),
		chromedp.Text(`[data-testid=rp-remaining]`, &remaining),
	)
	if err != nil {
		t.Fatal(err)
	}
	var yuan, fen int64
	if _, err := fmt.Sscanf(amount, "¥%d.%d", &yuan, &fen); err != nil {
		t.Fatalf("shown amount %q: %v", amount, err)
	}
	mineCents := yuan*100 + fen
	var grabs rpGrabsJSON
	a.call("GET", fmt.Sprintf("/api/redpackets/%d/grabs", id), "", nil, &grabs)
	if len(grabs.Grabs) != 2 || grabs.Grabs[0].UserID != shopper.User.ID || grabs.Grabs[0].AmountCents != mineCents {
		t.Fatalf("grabs %+v, want the shopper's %d cents first", grabs, mineCents)
	}
	wantLucky := fmt.Sprint(shopper.User.ID) // the earlier grab wins a tie
	if g.AmountCents > mineCents {
		wantLucky = fmt.Sprint(otherID)
	}
	if items != 2 || lucky != wantLucky || remaining != "1" {
		t.Fatalf("live list has %d grabs, luckiest user %q, %s left; want 2 with user %s marked, 1 left", items, lucky, remaining, wantLucky)
	}

	// The merchant's page shows the claimed count, and the next grab live.
	err = chromedp.Run(ctx,
		rpBrowserLogin(ctx, a.URL, merchantName, "password123"),
		chromedp.Navigate(location),
		chromedp.WaitVisible(`[data-testid=admin-redpacket][data-rp-live=on]`),
		chromedp.Text(`[data-testid=rp-stat-claimed]`, &claimedAdmin),
	)
	if err != nil || claimedAdmin != "2" {
		t.Fatalf("merchant page claimed %q, %v", claimedAdmin, err)
	}
	third, _ := a.newUser()
	a.grabRedPacket(third, id)
	err = chromedp.Run(ctx,
		chromedp.Poll(`document.querySelector('[data-testid=rp-stat-claimed]').textContent === "3"`, nil),
		chromedp.Poll(`document.querySelector('[data-testid=rp-stat-flushed]').textContent === "3"`, nil),
		chromedp.Poll(`document.querySelectorAll('[data-testid=rp-grab]').length === 3`, nil),
	)
	if err != nil {
		t.Fatalf("merchant page did not show the third grab live: %v", err)
	}
}

// The create form without JavaScript: the server puts the message beside the
// field at fault and creates nothing; a good form leads to the packet's page.
func TestRedPacketFormServerValidation(t *testing.T) {
	a := startApp(t)
	name := fmt.Sprintf("rpf%d", time.Now().UnixNano()%1e6)
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	body, _ := json.Marshal(map[string]string{"username": name, "password": "password123"})
	res, err := client.Post(a.URL+"/api/auth/login", "application/json", strings.NewReader(string(body)))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("login: %v %v", res, err)
	}
	res.Body.Close()
	page := func(res *http.Response, err error) (int, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	_, html := page(client.Get(a.URL + "/admin/redpackets"))
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(html)
	if m == nil {
		t.Fatal("no CSRF token on the form")
	}
	form := func(total, count, mode, expires string) url.Values {
		return url.Values{"_csrf": {m[1]}, "title": {"Form packet"}, "total": {total}, "count": {count}, "mode": {mode}, "expires_in": {expires}}
	}
	for _, tc := range []struct {
		name, total, count, mode, expires, testid, message string
	}{
		{"fixed not divisible", "10.01", "3", "fixed", "1h", "rp-error-total", "divisible"},
		{"total not an amount", "ten", "3", "random", "1h", "rp-error-total", "amount such as"},
		{"count zero", "10", "0", "random", "1h", "rp-error-count", "between 1 and"},
		{"count not a number", "10", "x", "random", "1h", "rp-error-count", "whole number"},
		{"bad expiry", "10", "3", "random", "soon", "rp-error-expires", "duration"},
	} {
		status, html := page(client.PostForm(a.URL+"/admin/redpackets", form(tc.total, tc.count, tc.mode, tc.expires)))
		re := regexp.MustCompile(`data-testid="` + tc.testid + `">([^<]*)<`)
		got := re.FindStringSubmatch(html)
		// Beside its field the message does not name the field again ("must be ...", not "count: must be ...").
		if status != http.StatusUnprocessableEntity || got == nil || !strings.Contains(got[1], tc.message) || !strings.HasPrefix(got[1], "must ") {
			t.Fatalf("%s: status %d, %s = %v; want 422 with %q", tc.name, status, tc.testid, got, tc.message)
		}
		if !strings.Contains(html, `value="Form packet"`) {
			t.Fatalf("%s: the form lost what was typed", tc.name)
		}
	}
	if pk, _, _ := a.redPacketRows(); pk != 0 {
		t.Fatalf("refused forms created %d packets", pk)
	}
	status, _ := page(client.PostForm(a.URL+"/admin/redpackets", form("88.88", "8", "random", "2h")))
	if pk, _, _ := a.redPacketRows(); status != http.StatusSeeOther || pk != 1 {
		t.Fatalf("good form: status %d, %d packets; want a redirect and 1 packet", status, pk)
	}
	var list struct{ Redpackets []rpJSON }
	a.call("GET", "/api/redpackets", "", nil, &list)
	if len(list.Redpackets) != 1 || list.Redpackets[0].TotalCents != 8888 || list.Redpackets[0].Count != 8 {
		t.Fatalf("created from the form: %+v", list)
	}
	// "Expires in" a date and time: in the past it is refused beside the
	// field; ahead it is the packet's expiry, to the second.
	at := func(when time.Time) url.Values {
		v := form("10.00", "2", "random", "at")
		v.Set("expires_at", when.Format(time.RFC3339))
		return v
	}
	status, html = page(client.PostForm(a.URL+"/admin/redpackets", at(a.Clock.Now().Add(-time.Hour))))
	if got := regexp.MustCompile(`data-testid="rp-error-expires">([^<]*)<`).FindStringSubmatch(html); status != http.StatusUnprocessableEntity || got == nil || got[1] != "must be a date and time in the future" {
		t.Fatalf("an expiry in the past: %d %v", status, got)
	}
	when := a.Clock.Now().Add(50 * time.Hour).Truncate(time.Second)
	if status, _ := page(client.PostForm(a.URL+"/admin/redpackets", at(when))); status != http.StatusSeeOther {
		t.Fatalf("an expiry at a date: %d", status)
	}
	a.call("GET", "/api/redpackets", "", nil, &list)
	if len(list.Redpackets) != 2 || list.Redpackets[0].ExpiresAt.Sub(when).Abs() > 2*time.Second && list.Redpackets[1].ExpiresAt.Sub(when).Abs() > 2*time.Second {
		t.Fatalf("the packet made to expire at %s: %+v", when, list.Redpackets)
	}
	if _, html := page(client.PostForm(a.URL+"/admin/redpackets", url.Values{"title": {"no token"}})); !strings.Contains(html, "form has expired") {
		t.Fatal("a form post without the CSRF token was not refused")
	}
}
