package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/audit"
)

type auditEntryJSON struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	ActorID int64     `json:"actor_id"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Target  string    `json:"target"`
	Detail  string    `json:"detail"`
}

// auditLog fetches GET /api/admin/audit with the query and fails unless it answers 200.
func (a *testApp) auditLog(token, query string) []auditEntryJSON {
	a.T.Helper()
	var out struct {
		Entries []auditEntryJSON `json:"entries"`
	}
	if st := a.call("GET", "/api/admin/audit"+query, token, nil, &out); st != 200 {
		a.T.Fatalf("GET /api/admin/audit%s: %d", query, st)
	}
	return out.Entries
}

// findAudit returns the newest entry with the action and target, or fails.
func findAudit(t *testing.T, es []auditEntryJSON, action, target string) auditEntryJSON {
	t.Helper()
	for _, e := range es {
		if e.Action == action && e.Target == target {
			return e
		}
	}
	t.Fatalf("no %s on %q among %+v", action, target, es)
	return auditEntryJSON{}
}

// getPage fetches an HTML page as the bearer of token and returns status and body.
func (a *testApp) getPage(token, path string) (int, string) {
	a.T.Helper()
	req, _ := http.NewRequest("GET", a.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A merchant's changes through the API and the merchant pages become entries
// with the merchant as actor and the item as target; refused changes and
// secrets do not; the merchant sees only its own entries, the admin all.
func TestAuditRecordsChanges(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	merchant, mid := a.newMerchant()
	var me authAnswer
	a.call("GET", "/api/me", merchant, nil, &me)

	sl := a.createSlot(merchant, time.Hour, time.Hour)
	g := a.createGoods(merchant, sl.ID, 5, 1)
	upd := map[string]any{"slot_id": sl.ID, "title": "Renamed", "description": "nice", "price_cents": 10000, "seckill_price_cents": 2500, "stock": 5, "limit_per_user": 1}
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), merchant, upd, nil); st != 200 {
		t.Fatalf("update goods: %d", st)
	}
	a.wantError("POST", "/api/admin/goods", merchant, map[string]any{"slot_id": sl.ID, "title": "No stock", "price_cents": 1, "stock": 0}, 400, "invalid")

	// A change through the merchant pages: the red packet form.
	client := browserClient(t)
	res, err := client.Post(a.URL+"/api/auth/login", "application/json", strings.NewReader(fmt.Sprintf(`{"username":%q,"password":"password123"}`, me.User.Username)))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("cookie login: %v %v", res, err)
	}
	res.Body.Close()
	res, err = client.Get(a.URL + "/admin/redpackets")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(html)
	if m == nil {
		t.Fatal("no CSRF token on the red packet form")
	}
	res, err = client.PostForm(a.URL+"/admin/redpackets", url.Values{"_csrf": {string(m[1])}, "title": {"Form packet"}, "total": {"8.88"}, "count": {"4"}, "mode": {"random"}, "expires_in": {"1h"}})
	if err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("red packet form: %v %v", res, err)
	}
	res.Body.Close()
	packetPath := res.Header.Get("Location") // /admin/redpackets/ID

	mine := a.auditLog(merchant, "")
	for _, e := range mine {
		if e.ActorID != mid || e.Actor != me.User.Username {
			t.Errorf("the merchant sees an entry by someone else: %+v", e)
		}
	}
	sc := findAudit(t, mine, "slot.create", fmt.Sprintf("slot:%d", sl.ID))
	gc := findAudit(t, mine, "goods.create", fmt.Sprintf("goods:%d", g.ID))
	gu := findAudit(t, mine, "goods.update", fmt.Sprintf("goods:%d", g.ID))
	rp := findAudit(t, mine, "redpacket.create", "redpacket:"+strings.TrimPrefix(packetPath, "/admin/redpackets/"))
	if !(sc.ID < gc.ID && gc.ID < gu.ID && gu.ID < rp.ID) {
		t.Errorf("entries out of order: %d %d %d %d", sc.ID, gc.ID, gu.ID, rp.ID)
	}
	if !strings.Contains(gc.Detail, `"title":"`+g.Title+`"`) || !strings.Contains(gu.Detail, `"title":"Renamed"`) {
		t.Errorf("goods details %q / %q, want the submitted titles", gc.Detail, gu.Detail)
	}
	if !strings.Contains(rp.Detail, `"title":"Form packet"`) || strings.Contains(rp.Detail, "_csrf") {
		t.Errorf("form detail %q, want the fields without _csrf", rp.Detail)
	}
	for _, e := range mine {
		if strings.Contains(e.Detail, "No stock") {
			t.Errorf("a refused change was recorded: %+v", e)
		}
		if e.At.IsZero() || e.At.After(time.Now().Add(time.Minute)) {
			t.Errorf("entry time %v", e.At)
		}
	}

	all := a.auditLog(admin, "?limit=200")
	uc := findAudit(t, all, "user.create", fmt.Sprintf("user:%d", mid))
	if uc.Actor != a.Config.AdminUsername || uc.ActorID == mid {
		t.Errorf("user.create by %q (%d), want the admin", uc.Actor, uc.ActorID)
	}
	if strings.Contains(uc.Detail, "password") || !strings.Contains(uc.Detail, `"role":"merchant"`) {
		t.Errorf("user.create detail %q, want the role and no password", uc.Detail)
	}
	findAudit(t, all, "goods.update", fmt.Sprintf("goods:%d", g.ID))
}

// Sign-ins are recorded, failures with the username tried and no actor id.
func TestAuditRecordsSignIns(t *testing.T) {
	a := startApp(t)
	tried := fmt.Sprintf("nobody_%d", userSeq.Add(1))
	a.wantError("POST", "/api/auth/login", "", map[string]string{"username": tried, "password": "wrong-password"}, 401, "unauthorized")
	admin := a.adminToken()
	_, uid := a.newUser()

	// The HTML form, with a wrong password for a real account.
	client := browserClient(t)
	token := pageCSRF(t, client, a.URL+"/login")
	res, err := client.PostForm(a.URL+"/login", url.Values{"_csrf": {token}, "username": {a.Config.AdminUsername}, "password": {"not-it"}})
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("form login with a wrong password: %v %v", res, err)
	}
	res.Body.Close()

	es := a.auditLog(admin, "")
	failed := findAudit(t, es, "auth.login_failed", "")
	if failed.Actor != a.Config.AdminUsername || failed.ActorID != 0 || strings.Contains(failed.Detail, "not-it") {
		t.Errorf("form failure %+v, want the tried username, no actor id, no password", failed)
	}
	var apiFailed auditEntryJSON
	for _, e := range es {
		if e.Action == "auth.login_failed" && e.Actor == tried {
			apiFailed = e
		}
	}
	if apiFailed.ID == 0 || apiFailed.ActorID != 0 {
		t.Errorf("no auth.login_failed by %q among %+v", tried, es)
	}
	var adminLogin auditEntryJSON
	for _, e := range es {
		if e.Action == "auth.login" && e.Actor == a.Config.AdminUsername {
			adminLogin = e
		}
	}
	if adminLogin.ActorID == 0 || adminLogin.Target != fmt.Sprintf("user:%d", adminLogin.ActorID) {
		t.Errorf("no successful admin login with its id among %+v", es)
	}
	reg := findAudit(t, es, "auth.register", fmt.Sprintf("user:%d", uid))
	if reg.ActorID != uid {
		t.Errorf("register entry %+v, want actor %d", reg, uid)
	}

	// The page shows the client address beside each entry.
	st, html := a.getPage(admin, "/admin/audit")
	if st != 200 || !strings.Contains(html, `data-testid="audit-log"`) || !strings.Contains(html, "127.0.0.1") || !strings.Contains(html, tried) {
		t.Fatalf("audit page: %d, want the table with the address and %q", st, tried)
	}
}

// Only staff read the log; it pages newest first by before and limit; bad paging is 400.
func TestAuditAccessAndPaging(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	shopper, _ := a.newUser()
	merchant, _ := a.newMerchant()
	a.wantError("GET", "/api/admin/audit", shopper, nil, 403, "forbidden")
	a.wantError("GET", "/api/admin/audit", "", nil, 401, "unauthorized")
	if st, _ := a.getPage(shopper, "/admin/audit"); st != 403 {
		t.Errorf("shopper on the audit page: %d, want 403", st)
	}

	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if err := a.Audit.Append(ctx, audit.Entry{Actor: "seed", Action: "test.seed", Target: fmt.Sprint("n:", i)}); err != nil {
			t.Fatal(err)
		}
	}
	all := a.auditLog(admin, "?limit=200")
	if len(all) < 60 {
		t.Fatalf("%d entries, want at least 60", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Fatalf("not newest first at %d: %d after %d", i, all[i].ID, all[i-1].ID)
		}
	}
	if got := a.auditLog(admin, ""); len(got) != 50 {
		t.Errorf("default page of %d entries, want 50", len(got))
	}
	ids := func(es []auditEntryJSON) string {
		var r []int64
		for _, e := range es {
			r = append(r, e.ID)
		}
		return fmt.Sprint(r)
	}
	first := a.auditLog(admin, "?limit=3")
	next := a.auditLog(admin, fmt.Sprintf("?limit=3&before=%d", first[2].ID))
	if want, got := ids(all[:6]), ids(append(first, next...)); got != want {
		t.Errorf("two pages (-want +got)\n- %s\n+ %s", want, got)
	}
	if got := a.auditLog(merchant, "?limit=200"); len(got) != 1 || got[0].Action != "auth.login" {
		t.Errorf("the merchant sees %+v, want only its own sign-in", got)
	}

	for _, q := range []string{"?limit=abc", "?limit=201", "?limit=-1", "?before=x", "?before=-5"} {
		a.wantError("GET", "/api/admin/audit"+q, admin, nil, 400, "invalid")
	}

	// The page shows 50 and links the older ones.
	st, html := a.getPage(admin, "/admin/audit")
	older := regexp.MustCompile(`href="(/admin/audit\?before=\d+)" data-testid="audit-older"`).FindStringSubmatch(html)
	if st != 200 || strings.Count(html, `data-testid="audit-entry-`) != 50 || older == nil {
		t.Fatalf("audit page: %d with %d rows, older link %v", st, strings.Count(html, `data-testid="audit-entry-`), older)
	}
	st, html = a.getPage(admin, older[1])
	if st != 200 || !strings.Contains(html, fmt.Sprintf(`data-testid="audit-entry-%d"`, all[50].ID)) {
		t.Fatalf("older page %s: %d, want entry %d", older[1], st, all[50].ID)
	}
}
