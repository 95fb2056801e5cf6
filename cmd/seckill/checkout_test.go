package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/tasks"
)

// checkoutOrderJSON is an order with what checkout adds.
type checkoutOrderJSON struct {
	orderJSON
	DiscountCents int64      `json:"discount_cents"`
	PaidCents     int64      `json:"paid_cents"`
	UserCouponID  int64      `json:"user_coupon_id"`
	PaidAt        *time.Time `json:"paid_at"`
}

type userCouponJSON struct {
	ID         int64     `json:"id"`
	CouponID   int64     `json:"coupon_id"`
	Status     string    `json:"status"`
	ValidUntil time.Time `json:"valid_until"`
	OrderID    int64     `json:"order_id"`
}

// couponTemplate has the merchant put up a template open now.
func (a *testApp) couponTemplate(token, kind string, value, minSpend int64, validDays int) couponJSON {
	a.T.Helper()
	now := a.Clock.Now()
	var out struct{ Coupon couponJSON }
	body := map[string]any{"title": "Deal", "kind": kind, "value": value, "min_spend_cents": minSpend, "stock": 50, "limit_per_user": 5,
		"grab_start_at": now.Add(-time.Second).Format(time.RFC3339), "grab_end_at": now.Add(time.Hour).Format(time.RFC3339), "valid_days": validDays}
	if st := a.call("POST", "/api/admin/coupons", token, body, &out); st != 201 {
		a.T.Fatalf("create coupon: %d", st)
	}
	return out.Coupon
}

func (a *testApp) grabCoupon(token string, couponID int64) userCouponJSON {
	a.T.Helper()
	var out struct {
		UserCoupon userCouponJSON `json:"user_coupon"`
	}
	if st := a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", couponID), token, nil, &out); st != 201 {
		a.T.Fatalf("grab coupon %d: %d", couponID, st)
	}
	return out.UserCoupon
}

func (a *testApp) pay(token string, orderID, userCouponID int64) (int, checkoutOrderJSON) {
	a.T.Helper()
	var out struct{ Order checkoutOrderJSON }
	var body any
	if userCouponID != 0 {
		body = map[string]int64{"user_coupon_id": userCouponID}
	}
	st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", orderID), token, body, &out)
	return st, out.Order
}

func (a *testApp) myCoupon(token string, id int64) userCouponJSON {
	a.T.Helper()
	var found userCouponJSON
	// The list reads the store: a coupon grabbed a moment ago shows once flushed.
	eventually(a.T, 10*time.Second, fmt.Sprintf("coupon %d in the user's list", id), func() bool {
		var out struct{ Coupons []userCouponJSON }
		a.call("GET", "/api/me/coupons", token, nil, &out)
		for _, c := range out.Coupons {
			if c.ID == id {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// TestCheckoutHTTPContract pays with coupons and refunds through the API as
// the contract (docs/openapi.yaml) states it.
func TestCheckoutHTTPContract(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(10, 5) // 2500 cents each
	ut, _ := a.newUser()
	other, _ := a.newUser()
	off := a.couponTemplate(mt, "amount_off", 500, 2000, 7)
	pct := a.couponTemplate(mt, "percent_off", 15, 0, 7)
	big := a.couponTemplate(mt, "amount_off", 500, 5000, 7)
	short := a.couponTemplate(mt, "amount_off", 100, 0, 1)
	ucOff, ucPct, ucBig, ucShort := a.grabCoupon(ut, off.ID), a.grabCoupon(ut, pct.ID), a.grabCoupon(ut, big.ID), a.grabCoupon(ut, short.ID)
	ucOther := a.grabCoupon(other, off.ID)

	o := a.grab(ut, g.ID)
	path := fmt.Sprintf("/api/orders/%d/pay", o.ID)
	a.wantError("POST", path, ut, `{"user_coupon_id":"x"}`, 400, "invalid")
	a.wantError("POST", path, ut, `{"user_coupon_id":`, 400, "invalid")
	a.wantError("POST", path, ut, map[string]int64{"user_coupon_id": ucBig.ID}, 400, "invalid")
	a.wantError("POST", path, ut, map[string]int64{"user_coupon_id": ucOther.ID}, 404, "not_found")
	a.wantError("POST", path, other, map[string]int64{"user_coupon_id": ucOther.ID}, 404, "not_found") // another user's order
	if got := a.order(ut, o.ID); got.Status != "unpaid" {
		t.Fatalf("order %s after refused pays", got.Status)
	}
	// Paid with the coupon grabbed a moment ago (not flushed yet).
	st, paid := a.pay(ut, o.ID, ucOff.ID)
	if st != 200 || paid.Status != "paid" || paid.DiscountCents != 500 || paid.PaidCents != 2000 || paid.UserCouponID != ucOff.ID || paid.PaidAt == nil {
		t.Fatalf("pay with coupon: %d %+v", st, paid)
	}
	if c := a.myCoupon(ut, ucOff.ID); c.Status != "used" || c.OrderID != o.ID {
		t.Fatalf("coupon after pay: %+v", c)
	}
	if st, again := a.pay(ut, o.ID, ucOff.ID); st != 200 || again.PaidCents != 2000 || again.DiscountCents != 500 {
		t.Fatalf("pay again: %d %+v", st, again)
	}
	o2 := a.grab(ut, g.ID)
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o2.ID), ut, map[string]int64{"user_coupon_id": ucOff.ID}, 409, "conflict")
	// percent_off rounds down: 15% of 2500 is 375.
	if st, p := a.pay(ut, o2.ID, ucPct.ID); st != 200 || p.DiscountCents != 375 || p.PaidCents != 2125 {
		t.Fatalf("pay with 15%% off: %d %+v", st, p)
	}
	// Without a coupon the whole amount is paid.
	o3 := a.grab(ut, g.ID)
	if st, p := a.pay(ut, o3.ID, 0); st != 200 || p.PaidCents != 2500 || p.DiscountCents != 0 {
		t.Fatalf("pay without a coupon: %d %+v", st, p)
	}

	// Refunds: only a paid order; the coupon comes back; the unit goes back on sale.
	o4 := a.grab(ut, g.ID)
	refund := func(id int64) string { return fmt.Sprintf("/api/orders/%d/refund", id) }
	a.wantError("POST", refund(o4.ID), ut, nil, 409, "conflict")
	a.wantError("POST", refund(o.ID), other, nil, 404, "not_found")
	before := a.goods(g.ID).Remaining
	var r struct{ Order checkoutOrderJSON }
	if st := a.call("POST", refund(o.ID), ut, nil, &r); st != 200 || r.Order.Status != "refunded" {
		t.Fatalf("refund: %d %+v", st, r.Order)
	}
	if after := a.goods(g.ID).Remaining; after != before+1 {
		t.Fatalf("remaining %d after the refund, want %d", after, before+1)
	}
	if c := a.myCoupon(ut, ucOff.ID); c.Status != "unused" {
		t.Fatalf("coupon after refund: %+v", c)
	}
	if st := a.call("POST", refund(o.ID), ut, nil, &r); st != 200 || r.Order.Status != "refunded" {
		t.Fatalf("refund again: %d", st)
	}
	// Idempotency-Key: the same key answers the first refund again.
	if st, _ := a.pay(ut, o4.ID, 0); st != 200 {
		t.Fatal("pay o4")
	}
	first := a.keyed("POST", refund(o4.ID), ut, "refund-key-1")
	second := a.keyed("POST", refund(o4.ID), ut, "refund-key-1")
	if first != second || !strings.Contains(first, `"refunded"`) {
		t.Fatalf("keyed refunds answered %s then %s", first, second)
	}
	// Refunds are audited.
	var log struct {
		Entries []struct{ Action, Target string }
	}
	a.call("GET", "/api/admin/audit?limit=50", a.adminToken(), nil, &log)
	audited := 0
	for _, e := range log.Entries {
		if e.Action == "order.refund" && (e.Target == fmt.Sprintf("order:%d", o.ID) || e.Target == fmt.Sprintf("order:%d", o4.ID)) {
			audited++
		}
	}
	if audited < 2 {
		t.Fatalf("audit log %+v lacks the refunds", log.Entries)
	}

	// A day later the one-day coupon is expired: listed so, and refused.
	a.advance(24*time.Hour + time.Minute)
	if c := a.myCoupon(ut, ucShort.ID); c.Status != "expired" {
		t.Fatalf("coupon past its validity listed %q", c.Status)
	}
	_, g2 := a.liveGoods(5, 5)
	o5 := a.grab(ut, g2.ID)
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o5.ID), ut, map[string]int64{"user_coupon_id": ucShort.ID}, 409, "expired")
}

// keyed sends a write with an Idempotency-Key and returns the raw answer ("201 {…}").
func (a *testApp) keyed(method, path, token, key string) string {
	a.T.Helper()
	ans := a.keyedCall(method, path, token, key)
	return fmt.Sprintf("%d %s", ans.Status, ans.Raw)
}

// callback posts a gateway callback signed with secret ("" for none).
func (a *testApp) callback(body []byte, secret []byte) (int, string) {
	a.T.Helper()
	req, _ := http.NewRequest("POST", a.URL+"/api/payments/callback", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != nil {
		req.Header.Set(checkout.SignatureHeader, checkout.Sign(secret, body))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	var e apiError
	json.NewDecoder(res.Body).Decode(&e)
	return res.StatusCode, e.Error.Code
}

// paymentResult waits for the settle task of ref to finish and returns its result.
func (a *testApp) paymentResult(ref string) tasks.PaymentOutcome {
	a.T.Helper()
	var out tasks.PaymentOutcome
	eventually(a.T, 20*time.Second, "the payment "+ref+" settled", func() bool {
		info, err := a.Inspector.GetTaskInfo(tasks.QueueCritical, tasks.PaymentTaskID(ref))
		return err == nil && len(info.Result) > 0 && json.Unmarshal(info.Result, &out) == nil
	})
	return out
}

// TestPaymentCallback: the gateway's signed callback pays the order once per
// gateway_ref, refunds a payment for an expired order, and refuses bad
// signatures and bodies.
func TestPaymentCallback(t *testing.T) {
	a := startApp(t, func(c *Config) { c.PaymentSecret = "gateway-secret" })
	secret := []byte("gateway-secret")
	_, g := a.liveGoods(10, 5)
	ut, _ := a.newUser()
	o := a.grab(ut, g.ID)
	body, _ := json.Marshal(map[string]any{"order_id": o.ID, "paid_cents": o.AmountCents, "gateway_ref": "gw-1"})
	if st, code := a.callback(body, nil); st != 401 || code != "unauthorized" {
		t.Fatalf("no signature: %d %s", st, code)
	}
	if st, code := a.callback(body, []byte("wrong")); st != 401 || code != "unauthorized" {
		t.Fatalf("bad signature: %d %s", st, code)
	}
	if st, code := a.callback([]byte(`{"order_id":"x"}`), secret); st != 400 || code != "invalid" {
		t.Fatalf("malformed body: %d %s", st, code)
	}
	// 50 replays at once: one payment, paid once.
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make(chan int, 50)
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; st, _ := a.callback(body, secret); codes <- st }()
	}
	close(start)
	wg.Wait()
	close(codes)
	for st := range codes {
		if st != 202 {
			t.Fatalf("callback answered %d, want 202", st)
		}
	}
	if out := a.paymentResult("gw-1"); out.Outcome != "paid" {
		t.Fatalf("outcome %+v, want paid", out)
	}
	var n int
	a.SQL.R.QueryRow(`SELECT COUNT(*) FROM payments WHERE gateway_ref = 'gw-1'`).Scan(&n)
	if got := a.order(ut, o.ID); got.Status != "paid" || n != 1 {
		t.Fatalf("order %s with %d payments, want paid with 1", got.Status, n)
	}
	// A second payment of the paid order is refunded.
	body2, _ := json.Marshal(map[string]any{"order_id": o.ID, "paid_cents": o.AmountCents, "gateway_ref": "gw-2"})
	if st, _ := a.callback(body2, secret); st != 202 {
		t.Fatal(st)
	}
	if out := a.paymentResult("gw-2"); out.Outcome != "refunded" || out.Reason != "already_paid" {
		t.Fatalf("second payment %+v", out)
	}
	// An order past its deadline is refunded, not paid.
	late := a.grab(ut, g.ID)
	a.advance(31 * time.Minute)
	body3, _ := json.Marshal(map[string]any{"order_id": late.ID, "paid_cents": late.AmountCents, "gateway_ref": "gw-3"})
	if st, _ := a.callback(body3, secret); st != 202 {
		t.Fatal(st)
	}
	if out := a.paymentResult("gw-3"); out.Outcome != "refunded" || out.Reason != "expired" {
		t.Fatalf("payment of an expired order %+v", out)
	}
	if got := a.order(ut, late.ID); got.Status != "expired" {
		t.Fatalf("late order %s", got.Status)
	}
}

// TestOrdersCSV: a merchant downloads its goods' orders, current with the
// latest pay; another merchant's goods are not found.
func TestOrdersCSV(t *testing.T) {
	a := startApp(t, func(c *Config) { c.FlushInterval = time.Hour }) // only the export's own flush
	mt, g := a.liveGoods(10, 5)
	ut, uid := a.newUser()
	tpl := a.couponTemplate(mt, "amount_off", 300, 0, 7)
	uc := a.grabCoupon(ut, tpl.ID)
	o1, o2 := a.grab(ut, g.ID), a.grab(ut, g.ID)
	if st, _ := a.pay(ut, o1.ID, uc.ID); st != 200 {
		t.Fatal(st)
	}
	other, _ := a.newMerchant()
	a.wantError("GET", fmt.Sprintf("/api/admin/goods/%d/orders.csv", g.ID), other, nil, 404, "not_found")

	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/admin/goods/%d/orders.csv?format=machine", a.URL, g.ID), nil)
	req.Header.Set("Authorization", "Bearer "+mt)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "filename=") {
		t.Fatalf("CSV answer %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
	}
	recs := readCSV(t, res.Body)
	var me struct{ User struct{ Username string } }
	a.call("GET", "/api/me", ut, nil, &me)
	num := func(id int64) string { return fmt.Sprintf("G%d-%04d", g.ID, id%1_000_000_000) }
	want := [][]string{
		{"number", "order_id", "username", "user_id", "status", "amount", "discount", "paid", "created_at", "paid_at"},
		{num(o1.ID), fmt.Sprint(o1.ID), me.User.Username, fmt.Sprint(uid), "paid", "25.00", "3.00", "22.00"},
		{num(o2.ID), fmt.Sprint(o2.ID), me.User.Username, fmt.Sprint(uid), "unpaid", "25.00", "0.00", "0.00"},
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != strings.Join(want[0], ",") {
		t.Fatalf("CSV %q, want the header %q and 2 rows", recs, want[0])
	}
	_, zoneOffset := time.Now().Zone()
	for i, w := range want[1:] {
		r := recs[i+1]
		if strings.Join(r[:8], ",") != strings.Join(w, ",") {
			t.Fatalf("row %d %q, want it to start %q", i+1, r, w)
		}
		created, err := time.Parse(time.RFC3339, r[8])
		if _, off := created.Zone(); err != nil || off != zoneOffset {
			t.Fatalf("row %d created_at %q: %v, offset want %ds (the shop's zone)", i+1, r[8], err, zoneOffset)
		}
	}
	if _, err := time.Parse(time.RFC3339, recs[1][9]); err != nil || recs[2][9] != "" {
		t.Fatalf("paid_at %q and %q: want a time for the paid order, empty for the unpaid one", recs[1][9], recs[2][9])
	}
}

// readCSV reads an export: it must start with the UTF-8 byte order mark
// (spreadsheets then read it as UTF-8) and parse as CSV.
func readCSV(t *testing.T, r io.Reader) [][]string {
	t.Helper()
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	body, ok := bytes.CutPrefix(raw, []byte("\xef\xbb\xbf"))
	if !ok {
		t.Fatalf("export does not start with the UTF-8 byte order mark: %q", raw[:min(len(raw), 20)])
	}
	recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("export %q is not CSV: %v", body, err)
	}
	return recs
}
