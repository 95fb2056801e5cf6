package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/handlers"
)

// deskOrderJSON is an order as the merchant orders desk answers it.
type deskOrderJSON struct {
	ID            int64      `json:"id"`
	Number        string     `json:"number"`
	GoodsID       int64      `json:"goods_id"`
	GoodsTitle    string     `json:"goods_title"`
	UserID        int64      `json:"user_id"`
	Username      string     `json:"username"`
	Status        string     `json:"status"`
	AmountCents   int64      `json:"amount_cents"`
	DiscountCents int64      `json:"discount_cents"`
	PaidCents     int64      `json:"paid_cents"`
	CreatedAt     time.Time  `json:"created_at"`
	PaidAt        *time.Time `json:"paid_at"`
	RefundedAt    *time.Time `json:"refunded_at"`
}

type deskPageJSON struct {
	Orders     []deskOrderJSON `json:"orders"`
	NextBefore string          `json:"next_before"`
}

type deskStepJSON struct {
	At        time.Time `json:"at"`
	Status    string    `json:"status"`
	Actor     string    `json:"actor"`
	ActorName string    `json:"actor_name"`
	Detail    string    `json:"detail"`
}

type deskOrderPageJSON struct {
	Order   deskOrderJSON  `json:"order"`
	History []deskStepJSON `json:"history"`
}

// registerAs signs up a shopper with the given name and returns its token and ID.
func (a *testApp) registerAs(name string) (token string, id int64) {
	a.T.Helper()
	var out authAnswer
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, &out); st != 201 {
		a.T.Fatalf("register %s: %d", name, st)
	}
	return out.Token, out.User.ID
}

// desk lists the desk with the query and fails unless it answers 200.
func (a *testApp) desk(token string, q url.Values) deskPageJSON {
	a.T.Helper()
	var out deskPageJSON
	if st := a.call("GET", "/api/admin/orders?"+q.Encode(), token, nil, &out); st != 200 {
		a.T.Fatalf("desk ?%s: %d", q.Encode(), st)
	}
	return out
}

func deskIDs(p deskPageJSON) []int64 {
	ids := []int64{}
	for _, o := range p.Orders {
		ids = append(ids, o.ID)
	}
	return ids
}

// deskAudit is the merchant's audit entries of refunds of order id.
func (a *testApp) deskAudit(token string, id int64) []string {
	a.T.Helper()
	var out struct {
		Entries []struct {
			Action, Target, Detail string
		}
	}
	if st := a.call("GET", "/api/admin/audit?limit=200", token, nil, &out); st != 200 {
		a.T.Fatalf("audit: %d", st)
	}
	var details []string
	for _, e := range out.Entries {
		if e.Action == "order.refund" && e.Target == fmt.Sprintf("order:%d", id) {
			details = append(details, e.Detail)
		}
	}
	return details
}

// TestOrdersDesk: a merchant finds its orders by number, ID or the start
// of a username, filters and pages them, sees one order's history and
// refunds it with a reason (audited; then 409), while bad reasons change
// nothing; another merchant's orders are never listed and 404 one by one.
func TestOrdersDesk(t *testing.T) {
	a := startApp(t, func(c *Config) { c.PaymentSecret = "gateway-secret" })
	m1, g1 := a.liveGoods(50, 10)
	m2, g2 := a.liveGoods(50, 10)
	admin := a.adminToken()
	tag := fmt.Sprintf("d%d", time.Now().UnixNano()%1e7)
	alice, aliceID := a.registerAs(tag + "_alice")
	bob, _ := a.registerAs(tag + "_bob")

	tpl := a.couponTemplate(m1, "amount_off", 300, 0, 7)
	uc := a.grabCoupon(alice, tpl.ID)
	o1 := a.grab(alice, g1.ID)
	a.advance(time.Millisecond) // distinct creation times: newest first is well defined
	o2 := a.grab(alice, g1.ID)
	var bobs []int64
	for range 5 {
		a.advance(time.Millisecond)
		bobs = append(bobs, a.grab(bob, g1.ID).ID)
	}
	other := a.grab(alice, g2.ID) // m2's goods
	a.myCoupon(alice, uc.ID)
	if st, _ := a.pay(alice, o1.ID, uc.ID); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	all := append([]int64{o1.ID, o2.ID}, bobs...)
	eventually(t, 15*time.Second, "the desk to list the 7 orders, o1 paid", func() bool {
		p := a.desk(m1, url.Values{"status": {"paid"}})
		return len(a.desk(m1, nil).Orders) == 7 && len(p.Orders) == 1 && p.Orders[0].ID == o1.ID
	})

	full := a.desk(m1, nil)
	if got, want := deskIDs(full), []int64{bobs[4], bobs[3], bobs[2], bobs[1], bobs[0], o2.ID, o1.ID}; !slices.Equal(got, want) {
		t.Fatalf("desk lists %v, want newest first %v", got, want)
	}
	first := full.Orders[6]
	num := fmt.Sprintf("G%d-%04d", g1.ID, o1.ID%1_000_000_000)
	if first.Number != num || first.Username != tag+"_alice" || first.UserID != aliceID || first.GoodsTitle != g1.Title ||
		first.AmountCents != 2500 || first.DiscountCents != 300 || first.PaidCents != 2200 || first.PaidAt == nil || first.RefundedAt != nil {
		t.Fatalf("o1 on the desk: %+v (number want %s)", first, num)
	}

	for _, c := range []struct {
		name string
		q    url.Values
		want []int64
	}{
		{"number", url.Values{"q": {num}}, []int64{o1.ID}},
		{"number as pages show it", url.Values{"q": {"#" + num}}, []int64{o1.ID}},
		{"order id", url.Values{"q": {fmt.Sprint(o2.ID)}}, []int64{o2.ID}},
		{"exact username", url.Values{"q": {tag + "_alice"}}, []int64{o2.ID, o1.ID}},
		{"username prefix, any case", url.Values{"q": {strings.ToUpper(tag + "_AL")}}, []int64{o2.ID, o1.ID}},
		{"prefix of both", url.Values{"q": {tag + "_"}}, deskIDs(full)},
		{"a _ is not a wildcard", url.Values{"q": {tag + "_b_b"}}, []int64{}},
		{"another merchant's order by number", url.Values{"q": {fmt.Sprint(other.ID)}}, []int64{}},
		{"status", url.Values{"status": {"unpaid"}, "q": {tag + "_alice"}}, []int64{o2.ID}},
		{"goods", url.Values{"goods_id": {fmt.Sprint(g1.ID)}, "q": {tag + "_al"}}, []int64{o2.ID, o1.ID}},
		{"other goods", url.Values{"goods_id": {fmt.Sprint(g2.ID)}}, []int64{}},
		{"slot", url.Values{"slot_id": {fmt.Sprint(g1.SlotID)}, "q": {tag + "_alice"}}, []int64{o2.ID, o1.ID}},
		{"dates", url.Values{"from": {a.Clock.Now().Add(-48 * time.Hour).Format(time.DateOnly)}, "to": {a.Clock.Now().Add(48 * time.Hour).Format(time.DateOnly)}, "q": {tag + "_alice"}}, []int64{o2.ID, o1.ID}},
		{"dates before", url.Values{"to": {a.Clock.Now().Add(-48 * time.Hour).Format(time.DateOnly)}}, []int64{}},
	} {
		if got := deskIDs(a.desk(m1, c.q)); !slices.Equal(got, c.want) {
			t.Errorf("%s (?%s): got %v, want %v", c.name, c.q.Encode(), got, c.want)
		}
	}

	// Paging: 3 at a time, newest first, every order once.
	var paged []int64
	q := url.Values{"limit": {"3"}}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		p := a.desk(m1, q)
		if len(p.Orders) > 3 {
			t.Fatalf("a page of %d orders with limit 3", len(p.Orders))
		}
		paged = append(paged, deskIDs(p)...)
		if p.NextBefore == "" {
			break
		}
		q.Set("before", p.NextBefore)
	}
	if !slices.Equal(paged, deskIDs(full)) {
		t.Fatalf("paged %v, want %v", paged, deskIDs(full))
	}
	for _, bad := range []string{"limit=201", "limit=-1", "status=shipped", "before=nope", "goods_id=x", "from=tomorrow"} {
		a.wantError("GET", "/api/admin/orders?"+bad, m1, nil, 400, "invalid")
	}
	a.wantError("GET", "/api/admin/orders", alice, nil, 403, "forbidden")

	// Isolation: m2 sees its one order only; m1's are 404 one by one; the admin sees both merchants'.
	if got := deskIDs(a.desk(m2, nil)); !slices.Equal(got, []int64{other.ID}) {
		t.Fatalf("m2's desk %v, want only %d", got, other.ID)
	}
	a.wantError("GET", fmt.Sprintf("/api/admin/orders/%d", o1.ID), m2, nil, 404, "not_found")
	a.wantError("POST", fmt.Sprintf("/api/admin/orders/%d/refund", o1.ID), m2, map[string]string{"reason": "mine now"}, 404, "not_found")
	a.wantError("GET", fmt.Sprintf("/api/admin/orders/%d", other.ID), m1, nil, 404, "not_found")
	for _, path := range []string{"/admin/orders/%d", "/admin/orders/%d/refund"} {
		for token, want := range map[string]int{m1: 200, m2: 404} {
			req, _ := http.NewRequest("GET", a.URL+fmt.Sprintf(path, o1.ID), nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != want {
				t.Fatalf("order page %s: %d, want %d (404 for another merchant)", path, res.StatusCode, want)
			}
		}
	}
	if got := deskIDs(a.desk(admin, url.Values{"q": {tag + "_alice"}})); !slices.Equal(got, []int64{other.ID, o2.ID, o1.ID}) {
		t.Fatalf("admin's search %v, want alice's 3 orders", got)
	}
	_ = all

	// One order with its history.
	var one deskOrderPageJSON
	if st := a.call("GET", fmt.Sprintf("/api/admin/orders/%d", o1.ID), m1, nil, &one); st != 200 {
		t.Fatalf("desk order: %d", st)
	}
	if one.Order.Number != num || one.Order.Status != "paid" || len(one.History) != 2 || one.History[0].Status != "created" ||
		one.History[1].Status != "paid" || one.History[1].Actor != "shopper" || !strings.Contains(one.History[1].Detail, "3.00") {
		t.Fatalf("o1 with history %+v", one)
	}

	// Bad reasons: 400, nothing changes, nothing audited.
	refund := fmt.Sprintf("/api/admin/orders/%d/refund", o1.ID)
	for _, reason := range []string{"", "   ", strings.Repeat("é", 201)} {
		a.wantError("POST", refund, m1, map[string]string{"reason": reason}, 400, "invalid")
	}
	a.wantError("POST", refund, m1, map[string]any{}, 400, "invalid")
	if got := a.order(alice, o1.ID); got.Status != "paid" {
		t.Fatalf("after refused refunds o1 is %s", got.Status)
	}
	if d := a.deskAudit(m1, o1.ID); len(d) != 0 {
		t.Fatalf("refused refunds audited: %q", d)
	}
	a.wantError("POST", fmt.Sprintf("/api/admin/orders/%d/refund", o2.ID), m1, map[string]string{"reason": "unpaid"}, 409, "conflict")

	// The refund: 200 refunded, the coupon back, audited with its reason; again 409.
	reason := strings.Repeat("x", 180) + " — damaged"
	var out struct{ Order deskOrderJSON }
	if st := a.call("POST", refund, m1, map[string]string{"reason": reason}, &out); st != 200 || out.Order.Status != "refunded" || out.Order.ID != o1.ID {
		t.Fatalf("refund: %d %+v", st, out.Order)
	}
	if got := a.order(alice, o1.ID); got.Status != "refunded" {
		t.Fatalf("o1 is %s for its shopper after the refund", got.Status)
	}
	if got := a.myCoupon(alice, uc.ID); got.Status != "unused" {
		t.Fatalf("the coupon of the refunded order is %s, want unused", got.Status)
	}
	if d := a.deskAudit(m1, o1.ID); len(d) != 1 || !strings.Contains(d[0], "damaged") {
		t.Fatalf("audit of the refund %q, want one entry with the reason", d)
	}
	a.wantError("POST", refund, m1, map[string]string{"reason": "again"}, 409, "conflict")
	if d := a.deskAudit(m1, o1.ID); len(d) != 1 {
		t.Fatalf("the refused second refund was audited: %q", d)
	}
	var me struct{ User struct{ Username string } }
	a.call("GET", "/api/me", m1, nil, &me)
	one = deskOrderPageJSON{}
	a.call("GET", fmt.Sprintf("/api/admin/orders/%d", o1.ID), m1, nil, &one)
	last := one.History[len(one.History)-1]
	if len(one.History) != 3 || last.Status != "refunded" || last.Actor != "merchant" || last.ActorName != me.User.Username || last.Detail != reason ||
		one.Order.RefundedAt == nil {
		t.Fatalf("history after the refund %+v", one.History)
	}
	// Who else makes steps: the gateway pays, the shopper refunds.
	body, _ := json.Marshal(map[string]any{"order_id": bobs[0], "paid_cents": 2500, "gateway_ref": "desk-1"})
	if st, _ := a.callback(body, []byte("gateway-secret")); st != 202 {
		t.Fatalf("gateway callback: %d", st)
	}
	if out := a.paymentResult("desk-1"); out.Outcome != "paid" {
		t.Fatalf("gateway payment %+v", out)
	}
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/refund", bobs[0]), bob, nil, nil); st != 200 {
		t.Fatalf("shopper's refund: %d", st)
	}
	one = deskOrderPageJSON{}
	a.call("GET", fmt.Sprintf("/api/admin/orders/%d", bobs[0]), m1, nil, &one)
	if h := one.History; len(h) != 3 || h[1].Status != "paid" || h[1].Actor != "gateway" || h[1].ActorName != "" || h[1].Detail != "" ||
		h[2].Status != "refunded" || h[2].Actor != "shopper" || h[2].ActorName != tag+"_bob" {
		t.Fatalf("history of the gateway-paid order the shopper refunded: %+v", h)
	}
	// An order that was never paid ends by its shopper (cancelled) or the clock (expired).
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", bobs[1]), bob, nil, nil); st != 200 {
		t.Fatalf("cancel: %d", st)
	}
	one = deskOrderPageJSON{}
	a.call("GET", fmt.Sprintf("/api/admin/orders/%d", bobs[1]), m1, nil, &one)
	if h := one.History; len(h) != 2 || h[1].Status != "cancelled" || h[1].Actor != "shopper" {
		t.Fatalf("history of a cancelled order: %+v", h)
	}

	eventually(t, 15*time.Second, "the list to show o1 refunded", func() bool {
		p := a.desk(m1, url.Values{"q": {num}})
		return len(p.Orders) == 1 && p.Orders[0].Status == "refunded" && p.Orders[0].RefundedAt != nil
	})
}

// TestClaimsExports: a merchant exports who opened its red packet and who
// grabbed its coupon, and finds a shopper on the pages by username;
// another merchant's are not found.
func TestClaimsExports(t *testing.T) {
	a := startApp(t)
	m1, _ := a.newMerchant()
	m2, _ := a.newMerchant()
	tag := fmt.Sprintf("c%d", time.Now().UnixNano()%1e7)
	alice, aliceID := a.registerAs(tag + "_alice")
	bob, _ := a.registerAs(tag + "_bob")
	rp := a.createRedPacket(m1, map[string]any{"title": "Lucky ✨ \"quoted\", comma", "total_cents": 1000, "count": 4, "mode": "fixed"})
	a.grabRedPacket(alice, rp.ID)
	a.grabRedPacket(bob, rp.ID)
	tpl := a.couponTemplate(m1, "amount_off", 300, 0, 7)
	uc := a.grabCoupon(alice, tpl.ID)

	get := func(path, token string) (int, [][]string) {
		t.Helper()
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			return res.StatusCode, nil
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" || !strings.Contains(res.Header.Get("Content-Disposition"), ".csv") {
			t.Fatalf("%s: %q %q", path, ct, res.Header.Get("Content-Disposition"))
		}
		return 200, readCSV(t, res.Body)
	}
	_, grabs := get(fmt.Sprintf("/api/admin/redpackets/%d/grabs.csv", rp.ID), m1)
	if len(grabs) != 3 || strings.Join(grabs[0], ",") != "redpacket_id,username,user_id,amount,grabbed_at" ||
		strings.Join(grabs[1][:4], ",") != fmt.Sprintf("%d,%s_alice,%d,2.50", rp.ID, tag, aliceID) || grabs[2][1] != tag+"_bob" {
		t.Fatalf("grabs CSV %q", grabs)
	}
	if _, err := time.Parse(time.RFC3339, grabs[1][4]); err != nil {
		t.Fatalf("grabbed_at %q: %v", grabs[1][4], err)
	}
	_, claims := get(fmt.Sprintf("/api/admin/coupons/%d/claims.csv", tpl.ID), m1)
	if len(claims) != 2 || strings.Join(claims[0], ",") != "coupon_id,user_coupon_id,username,user_id,status,grabbed_at,valid_until,order_number" ||
		strings.Join(claims[1][:5], ",") != fmt.Sprintf("%d,%d,%s_alice,%d,unused", tpl.ID, uc.ID, tag, aliceID) {
		t.Fatalf("claims CSV %q", claims)
	}
	for _, p := range []string{fmt.Sprintf("/api/admin/redpackets/%d/grabs.csv", rp.ID), fmt.Sprintf("/api/admin/coupons/%d/claims.csv", tpl.ID)} {
		if st, _ := get(p, m2); st != 404 {
			t.Fatalf("%s for another merchant: %d, want 404", p, st)
		}
	}

	// The pages: "did this shopper get one?"
	page := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+m1)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := res.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
		return b.String()
	}
	body := page(fmt.Sprintf("/admin/redpackets/%d/grabs?q=%s", rp.ID, strings.ToUpper(tag+"_b")))
	if !strings.Contains(body, tag+"_bob") || strings.Contains(body, tag+"_alice") || !strings.Contains(body, "¥2.50") {
		t.Fatalf("grabs page searched for bob:\n%s", body)
	}
	body = page(fmt.Sprintf("/admin/coupons/%d/claims?q=%s", tpl.ID, tag+"_bob"))
	if !strings.Contains(body, `data-testid="claims-empty"`) {
		t.Fatalf("claims page searched for bob, who has none:\n%s", body)
	}
	if body = page(fmt.Sprintf("/admin/coupons/%d/claims?q=%s", tpl.ID, tag+"_al")); !strings.Contains(body, tag+"_alice") {
		t.Fatalf("claims page searched for alice:\n%s", body)
	}
}

// TestDeskRefundRace: many refunds of one paid order at once from the desk:
// exactly one is made (200, audited once), every other answers 409.
func TestDeskRefundRace(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(5, 1)
	ut, _ := a.newUser()
	o := a.grab(ut, g.ID)
	if st, _ := a.pay(ut, o.ID, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	const n = 24
	codes := make(chan int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			codes <- a.call("POST", fmt.Sprintf("/api/admin/orders/%d/refund", o.ID), mt, map[string]string{"reason": fmt.Sprint("race ", i)}, nil)
		}()
	}
	close(start)
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[200] != 1 || count[409] != n-1 {
		t.Fatalf("answers %v, want one 200 and %d 409", count, n-1)
	}
	if d := a.deskAudit(mt, o.ID); len(d) != 1 {
		t.Fatalf("audit entries of the refund %q, want 1", d)
	}
}

// The desk exports what its filters show: every order across its pages
// (more than one page of the list), newest first, with the goods' title
// and for a refund when, by whom and why; another merchant's orders never;
// a bad filter is a 400 before any row.
func TestDeskExport(t *testing.T) {
	a := startApp(t)
	m1, g := a.liveGoods(1000, 1000)
	m2, other := a.liveGoods(10, 10)
	shopper, _ := a.newUser()
	const n = checkout.DeskMaxLimit + 20
	var ids []int64
	for range n {
		ids = append(ids, a.grab(shopper, g.ID).ID)
	}
	a.grab(shopper, other.ID)
	paid := ids[3]
	if st, _ := a.pay(shopper, paid, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	if err := a.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := a.call("POST", fmt.Sprintf("/api/admin/orders/%d/refund", paid), m1, map[string]string{"reason": "arrived broken, \"box\" crushed"}, nil); st != 200 {
		t.Fatalf("refund: %d", st)
	}
	if err := a.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	get := func(token string, q url.Values) (int, [][]string) {
		t.Helper()
		q.Set("format", "machine") // the program's form: snake_case header, raw statuses, RFC 3339
		req, _ := http.NewRequest("GET", a.URL+"/api/admin/orders.csv?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			return res.StatusCode, nil
		}
		return 200, readCSV(t, res.Body)
	}
	_, all := get(m1, url.Values{})
	if len(all) != n+1 || strings.Join(all[0], ",") != strings.Join(handlers.DeskCSVColumns, ",") {
		t.Fatalf("export of every order: %d rows, header %q; want %d orders", len(all)-1, all[0], n)
	}
	for i, row := range all[1:] {
		if want := model.OrderNumber(ids[n-1-i]); row[0] != want || row[3] != g.Title {
			t.Fatalf("row %d: %q, want order %s of %q, newest first", i, row, want, g.Title)
		}
		if _, err := time.Parse(time.RFC3339, row[10]); err != nil {
			t.Fatalf("created_at %q: %v", row[10], err)
		}
	}
	_, refunded := get(m1, url.Values{"status": {"refunded"}})
	if len(refunded) != 2 {
		t.Fatalf("export of the refunded: %q", refunded)
	}
	r := refunded[1]
	if r[0] != model.OrderNumber(paid) || r[6] != "refunded" || r[12] == "" || r[14] != `arrived broken, "box" crushed` || r[13] == "" {
		t.Fatalf("refunded row %q: want its refund time, who and why", r)
	}
	if _, rows := get(m1, url.Values{"q": {model.OrderNumber(ids[0])}}); len(rows) != 2 || rows[1][0] != model.OrderNumber(ids[0]) {
		t.Fatalf("export searched for one order: %q", rows)
	}
	if _, rows := get(m2, url.Values{}); len(rows) != 2 || rows[1][3] != other.Title {
		t.Fatalf("the other merchant's export: %q, want only its one order", rows)
	}
	if st, _ := get(m1, url.Values{"status": {"lost"}}); st != 400 {
		t.Fatalf("export with a bad status: %d, want 400", st)
	}
	if st, _ := get(m1, url.Values{"from": {"yesterday"}}); st != 400 {
		t.Fatalf("export with a bad date: %d, want 400", st)
	}
	if st, _ := get(shopper, url.Values{}); st != 403 {
		t.Fatalf("a shopper's export: %d, want 403", st)
	}
}

// TestDeskRefundKeyed: a desk refund sent again with its Idempotency-Key
// answers as the first did, a refusal too, and is audited once; a key is
// the merchant's own, scoped to the order: the shopper's refund with the
// same key is not the merchant's, and another order is refunded afresh.
func TestDeskRefundKeyed(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(5, 5)
	ut, _ := a.newUser()
	paid := func() orderJSON {
		o := a.grab(ut, g.ID)
		if st, _ := a.pay(ut, o.ID, 0); st != 200 {
			t.Fatalf("pay %d: %d", o.ID, st)
		}
		return o
	}
	refund := func(id int64, token, key, reason string) answer {
		return send(t, "POST", fmt.Sprintf("%s/api/admin/orders/%d/refund", a.URL, id),
			map[string]string{"Authorization": "Bearer " + token, handlers.HeaderIdempotencyKey: key}, map[string]string{"reason": reason})
	}
	o1, o2 := paid(), paid()
	first := refund(o1.ID, mt, "desk-key-1", "broken")
	if first.status != 200 || !strings.Contains(string(first.body), `"refunded"`) {
		t.Fatalf("keyed desk refund: %d %s", first.status, first.body)
	}
	for i := range 2 {
		if again := refund(o1.ID, mt, "desk-key-1", "broken"); again.status != first.status || string(again.body) != string(first.body) {
			t.Fatalf("retry %d answered %d %s, want the first answer %d %s", i, again.status, again.body, first.status, first.body)
		}
	}
	if d := a.deskAudit(mt, o1.ID); len(d) != 1 {
		t.Fatalf("audit entries of a refund retried with its key %q, want 1", d)
	}
	if r := refund(o1.ID, mt, "desk-key-2", "broken"); r.status != 409 || r.code() != "conflict" {
		t.Fatalf("another key on the refunded order: %d %s, want 409 conflict", r.status, r.body)
	}
	if r := refund(o2.ID, mt, "desk-key-1", "broken"); r.status != 200 || !strings.Contains(string(r.body), fmt.Sprintf(`"id":%d`, o2.ID)) {
		t.Fatalf("the key on another order: %d %s, want that order refunded", r.status, r.body)
	}

	// A refusal is the first answer too: an unpaid order is refused, and
	// still is under its key once paid.
	o3 := a.grab(ut, g.ID)
	if r := refund(o3.ID, mt, "desk-key-3", "early"); r.status != 409 || r.code() != "conflict" {
		t.Fatalf("keyed refund of an unpaid order: %d %s", r.status, r.body)
	}
	if st, _ := a.pay(ut, o3.ID, 0); st != 200 {
		t.Fatalf("pay o3: %d", st)
	}
	if r := refund(o3.ID, mt, "desk-key-3", "early"); r.status != 409 || r.code() != "conflict" {
		t.Fatalf("the refused refund's key after the pay: %d %s, want its first answer, 409", r.status, r.body)
	}
	if got := a.order(ut, o3.ID); got.Status != "paid" {
		t.Fatalf("o3 is %s after a replayed refusal", got.Status)
	}

	// The shopper's key is the shopper's: the same key from the desk is a new refund.
	o4 := paid()
	shopper := send(t, "POST", fmt.Sprintf("%s/api/orders/%d/refund", a.URL, o4.ID),
		map[string]string{"Authorization": "Bearer " + ut, handlers.HeaderIdempotencyKey: "shared-key"}, nil)
	if shopper.status != 200 {
		t.Fatalf("shopper's keyed refund: %d %s", shopper.status, shopper.body)
	}
	if r := refund(o4.ID, mt, "shared-key", "late"); r.status != 409 || r.code() != "conflict" {
		t.Fatalf("the desk's refund with the shopper's key: %d %s, want 409 conflict", r.status, r.body)
	}
}
