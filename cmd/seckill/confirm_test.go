package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/model"
)

// page fetches an HTML page with the session's cookies, not following a
// redirect: status, body and Location.
func (s *cookieSession) page(path string) (int, string, string) {
	s.a.T.Helper()
	res, err := s.client.Get(s.a.URL + path)
	if err != nil {
		s.a.T.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header.Get("Location")
}

// postForm posts an HTML form with the session's cookies and CSRF token:
// status and Location.
func (s *cookieSession) postForm(path string, form url.Values) (int, string) {
	s.a.T.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", s.csrf)
	res, err := s.client.PostForm(s.a.URL+path, form)
	if err != nil {
		s.a.T.Fatalf("POST %s: %v", path, err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

func yuan(cents int64) string { return fmt.Sprintf("¥%d.%02d", cents/100, cents%100) }

// flashAt finds the flash shown beside a form (data-testid="flash-<place>"): its kind and text.
func flashAt(body, place string) (kind, text string, ok bool) {
	m := regexp.MustCompile(`data-testid="flash-` + regexp.QuoteMeta(place) + `" data-kind="([a-z]+)"[^>]*>([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// A shopper's refund and cancel ask first on a page of their own, which
// works without JavaScript: the GET asks and changes nothing, the POST (with
// the form's CSRF token) does it and answers beside the order in My orders,
// green; a refund of a cancelled order is refused there in red; the receipt stays
// reachable from the order.
func TestConfirmShopperRefundAndCancelWithoutScript(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(5, 2)
	s, _, _ := a.newCookieSession()
	paid := a.grab(s.token, g.ID)
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", paid.ID), s.token, nil, nil); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	number := "#" + model.OrderNumber(paid.ID)

	// The GET asks and changes nothing.
	st, body, _ := s.page(fmt.Sprintf("/orders/%d/refund", paid.ID))
	question := fmt.Sprintf("Refund order %s for %s?", number, yuan(paid.AmountCents))
	if st != 200 || !strings.Contains(body, question) || !strings.Contains(body, `data-testid="confirm-yes"`) || !strings.Contains(body, `href="/me/orders" data-testid="confirm-no"`) {
		t.Fatalf("refund confirm page: %d, want the question %q with Refund and Keep it:\n%s", st, question, body)
	}
	if o := a.order(s.token, paid.ID); o.Status != "paid" {
		t.Fatalf("asking refunded: %q", o.Status)
	}
	// The POST needs the form's CSRF token.
	res, err := s.client.PostForm(a.URL+fmt.Sprintf("/orders/%d/refund", paid.ID), url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || a.order(s.token, paid.ID).Status != "paid" {
		t.Fatalf("refund without the CSRF token: %d, order %q", res.StatusCode, a.order(s.token, paid.ID).Status)
	}
	// Confirmed: refunded, and My orders says so beside the order, green.
	if st, loc := s.postForm(fmt.Sprintf("/orders/%d/refund", paid.ID), nil); st != 303 || loc != "/me/orders" {
		t.Fatalf("refund: %d → %q, want 303 → /me/orders", st, loc)
	}
	if o := a.order(s.token, paid.ID); o.Status != "refunded" {
		t.Fatalf("after the confirmed refund: %q", o.Status)
	}
	_, body, _ = s.page("/me/orders")
	if kind, text, ok := flashAt(body, fmt.Sprintf("order-%d", paid.ID)); !ok || kind != "success" || text != "Refunded "+yuan(paid.AmountCents)+"." {
		t.Fatalf("the refund's answer beside the order: %v %q %q", ok, kind, text)
	}
	if strings.Contains(body, `data-testid="flash"`) {
		t.Fatal("the refund's answer also shows at the top of the page")
	}
	if !strings.Contains(body, fmt.Sprintf(`href="/orders/%d/receipt"`, paid.ID)) {
		t.Fatal("a refunded order links no receipt in My orders")
	}
	// Asking again sends the shopper back: it is refunded already.
	if st, _, loc := s.page(fmt.Sprintf("/orders/%d/refund", paid.ID)); st != 303 || loc != "/me/orders" {
		t.Fatalf("asking to refund a refunded order: %d → %q", st, loc)
	}
	if st, body, _ := s.page(fmt.Sprintf("/orders/%d/receipt", paid.ID)); st != 200 || !strings.Contains(body, `data-testid="receipt-refunded"`) || !strings.Contains(body, number) {
		t.Fatalf("the receipt of a refunded order: %d", st)
	}

	// Cancel asks the same way.
	unpaid := a.grab(s.token, g.ID)
	st, body, _ = s.page(fmt.Sprintf("/orders/%d/cancel", unpaid.ID))
	if st != 200 || !strings.Contains(body, fmt.Sprintf("Cancel order #%s for %s?", model.OrderNumber(unpaid.ID), yuan(unpaid.AmountCents))) {
		t.Fatalf("cancel confirm page: %d\n%s", st, body)
	}
	if o := a.order(s.token, unpaid.ID); o.Status != "unpaid" {
		t.Fatalf("asking cancelled: %q", o.Status)
	}
	if st, loc := s.postForm(fmt.Sprintf("/orders/%d/cancel", unpaid.ID), nil); st != 303 || loc != "/me/orders" {
		t.Fatalf("cancel: %d → %q", st, loc)
	}
	if o := a.order(s.token, unpaid.ID); o.Status != "cancelled" {
		t.Fatalf("after the confirmed cancel: %q", o.Status)
	}
	// A refund of the cancelled order is refused, in red, beside it, and changes nothing.
	if st, loc := s.postForm(fmt.Sprintf("/orders/%d/refund", unpaid.ID), nil); st != 303 || loc != "/me/orders" {
		t.Fatalf("refund of a cancelled order: %d → %q", st, loc)
	}
	_, body, _ = s.page("/me/orders")
	if kind, text, ok := flashAt(body, fmt.Sprintf("order-%d", unpaid.ID)); !ok || kind != "error" || text == "" {
		t.Fatalf("a refund of a cancelled order is not refused beside it in red: %v %q %q", ok, kind, text)
	}
	if o := a.order(s.token, unpaid.ID); o.Status != "cancelled" {
		t.Fatalf("a refused refund changed the order: %q", o.Status)
	}
	// The audit log has the confirmed refund, not the refused one.
	es := a.auditLog(a.adminToken(), "")
	findAudit(t, es, "order.refund", fmt.Sprintf("order:%d", paid.ID))
	for _, e := range es {
		if e.Target == fmt.Sprintf("order:%d", unpaid.ID) && e.Action == "order.refund" {
			t.Fatalf("a refused refund was audited: %+v", e)
		}
	}
	// Another shopper's order is not found, asked or done.
	other, _, _ := a.newCookieSession()
	if st, _, _ := other.page(fmt.Sprintf("/orders/%d/refund", paid.ID)); st != 404 {
		t.Fatalf("another's refund page: %d, want 404", st)
	}
	if st, _ := other.postForm(fmt.Sprintf("/orders/%d/cancel", unpaid.ID), nil); st != 404 {
		t.Fatalf("another's cancel: %d, want 404", st)
	}
}

// "End sale now" asks first without JavaScript too: an unconfirmed post is
// sent to the confirm page and ends nothing; the confirm page's post ends it.
func TestConfirmEndSaleWithoutScript(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(5, 1)
	var me authAnswer
	a.call("GET", "/api/me", mt, nil, &me)
	s := a.cookieLogin(me.User.Username, "password123")
	base := fmt.Sprintf("/admin/goods/%d", g.ID)
	if st, loc := s.postForm(base+"/end", nil); st != 303 || loc != base+"/end" {
		t.Fatalf("unconfirmed end: %d → %q, want the confirm page", st, loc)
	}
	if st := a.call("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), mustUser(a), nil, nil); st != 201 {
		t.Fatalf("an unconfirmed end ended the sale: grab %d", st)
	}
	st, body, _ := s.page(base + "/end")
	if st != 200 || !strings.Contains(body, "End the sale of “"+g.Title+"” now?") || !strings.Contains(body, `name="confirmed" value="1"`) {
		t.Fatalf("end confirm page: %d\n%s", st, body)
	}
	if st, loc := s.postForm(base+"/end", url.Values{"confirmed": {"1"}}); st != 303 || loc != base {
		t.Fatalf("confirmed end: %d → %q", st, loc)
	}
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), mustUser(a), nil, 409, "ended")
	_, body, _ = s.page(base)
	if kind, _, ok := flashAt(body, "controls"); !ok || kind != "success" {
		t.Fatalf("the end's answer beside the controls: %v %q", ok, kind)
	}
}

func mustUser(a *testApp) string {
	tok, _ := a.newUser()
	return tok
}

// The checkout pays without JavaScript too: its form posts the coupon
// picked and ends on the receipt; a coupon that does not apply is refused
// beside the Pay form, in red, and nothing is paid.
func TestConfirmPayFormEndsOnReceipt(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(3, 2) // 2500 cents
	s, _, _ := a.newCookieSession()
	big := a.couponTemplate(mt, "amount_off", 300, 5000, 7) // needs ¥50.00
	off := a.couponTemplate(mt, "amount_off", 500, 2000, 7)
	ucBig, ucOff := a.grabCoupon(s.token, big.ID), a.grabCoupon(s.token, off.ID)
	o := a.grab(s.token, g.ID)
	path := fmt.Sprintf("/orders/%d", o.ID)
	if st, body, _ := s.page(path + "/checkout"); st != 200 || !strings.Contains(body, `method="post" action="`+path+`/pay"`) {
		t.Fatalf("the checkout form posts nowhere without a script: %d", st)
	}
	if st, body, loc := s.page(path + "/receipt"); st != 303 || loc != path+"/checkout" {
		t.Fatalf("the receipt of an unpaid order: %d → %q\n%s", st, loc, body)
	}
	if st, loc := s.postForm(path+"/pay", url.Values{"coupon": {fmt.Sprint(ucBig.ID)}}); st != 303 || loc != path+"/checkout" {
		t.Fatalf("pay with a coupon below its minimum: %d → %q", st, loc)
	}
	_, body, _ := s.page(path + "/checkout")
	if kind, text, ok := flashAt(body, "checkout"); !ok || kind != "error" || text == "" {
		t.Fatalf("the refusal beside the Pay form: %v %q %q", ok, kind, text)
	}
	if got := a.order(s.token, o.ID); got.Status != "unpaid" {
		t.Fatalf("a refused pay changed the order: %q", got.Status)
	}
	if st, loc := s.postForm(path+"/pay", url.Values{"coupon": {fmt.Sprint(ucOff.ID)}}); st != 303 || loc != path+"/receipt" {
		t.Fatalf("pay: %d → %q, want the receipt", st, loc)
	}
	st, body, _ := s.page(path + "/receipt")
	for _, want := range []string{"#" + model.OrderNumber(o.ID), g.Title, "¥25.00", "−¥5.00", "¥20.00", "“" + off.Title + "”"} {
		if st != 200 || !strings.Contains(body, want) {
			t.Fatalf("the receipt (%d) lacks %q", st, want)
		}
	}
	other, _, _ := a.newCookieSession()
	if st, _, _ := other.page(path + "/receipt"); st != 404 {
		t.Fatalf("another shopper's receipt: %d, want 404", st)
	}
}

// A started slot's edit form offers the title alone: saving it renames the
// slot and keeps its times (the form sends none), where a form with the
// times would have been refused only on save.
func TestLiveSlotFormKeepsTimes(t *testing.T) {
	a := startApp(t)
	name, mt := a.namedMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	s := a.cookieLogin(name, "password123")
	base := fmt.Sprintf("/admin/slots/%d", sl.ID)
	st, body, _ := s.page(base)
	if st != 200 || strings.Contains(body, `name="start_at"`) || !strings.Contains(body, `data-testid="slot-times-fixed"`) {
		t.Fatalf("a live slot's page offers its times for editing: %d", st)
	}
	if st, loc := s.postForm(base, url.Values{"title": {"Renamed live"}}); st != 303 || loc != base {
		t.Fatalf("rename a live slot: %d → %q", st, loc)
	}
	var mine struct{ Slots []slotJSON }
	a.call("GET", "/api/admin/slots", mt, nil, &mine)
	if len(mine.Slots) != 1 || mine.Slots[0].Title != "Renamed live" || !mine.Slots[0].StartAt.Equal(sl.StartAt) || !mine.Slots[0].EndAt.Equal(sl.EndAt) {
		t.Fatalf("after renaming: %+v, want the times of %+v", mine.Slots, sl)
	}
}
