package main

import (
	"fmt"
	"io"
	"net/url"
	"regexp"
	"testing"
	"time"
)

// postFormPage posts an HTML form with the session's cookies and CSRF
// token and returns the page it answers with.
func (s *cookieSession) postFormPage(path string, form url.Values) (int, string) {
	s.a.T.Helper()
	form.Set("_csrf", s.csrf)
	res, err := s.client.PostForm(s.a.URL+path, form)
	if err != nil {
		s.a.T.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A merchant's form with several problems answers them all at once, beside
// each field: the fields the server could not read and the rules broken by
// the ones it could, in one round. Nothing is created.
func TestFormsReportEveryProblemAtOnce(t *testing.T) {
	a := startApp(t)
	name, mt := a.namedMerchant()
	sl := a.createSlot(mt, time.Hour, time.Hour)
	s := a.cookieLogin(name, "password123")
	for _, c := range []struct {
		what, path string
		form       url.Values
		want       []string // the data-testid of each field error that must show
	}{
		{"a slot", "/admin/slots", url.Values{"title": {" "}, "start_at": {"tomorrow"}, "end_at": {"2030-01-01T10:00"}},
			[]string{"error-title", "error-start_at"}},
		{"goods", fmt.Sprintf("/admin/slots/%d/goods", sl.ID), url.Values{"title": {""}, "price_cents": {"ten"}, "seckill_price_cents": {"5"}, "stock": {"0"}},
			[]string{"error-title", "error-price_cents", "error-stock"}},
		{"a red packet", "/admin/redpackets", url.Values{"title": {""}, "total": {"lots"}, "count": {"0"}, "mode": {"random"}, "expires_in": {"24h"}},
			[]string{"rp-error-title", "rp-error-total", "rp-error-count"}},
		{"a coupon", "/admin/coupons", url.Values{"title": {""}, "kind": {"amount_off"}, "value": {"much"}, "stock": {"0"},
			"valid_days": {"99999"}, "grab_start_at": {"2030-01-01T10:00"}, "grab_end_at": {"2030-01-02T10:00"}},
			[]string{"error-title", "error-value", "error-stock", "error-valid_days"}},
	} {
		st, body := s.postFormPage(c.path, c.form)
		if st != 422 {
			t.Fatalf("%s with problems: %d, want 422", c.what, st)
		}
		for _, id := range c.want {
			m := regexp.MustCompile(`data-testid="` + id + `"[^>]*>([^<]+)<`).FindStringSubmatch(body)
			if m == nil {
				t.Errorf("%s: no message at %s in the first answer", c.what, id)
			}
		}
	}
	var slots struct{ Slots []slotJSON }
	a.call("GET", "/api/admin/slots", mt, nil, &slots)
	var gs struct{ Goods []goodsJSON }
	a.call("GET", fmt.Sprintf("/api/slots/%d/goods", sl.ID), "", nil, &gs)
	if len(slots.Slots) != 1 || len(gs.Goods) != 0 {
		t.Fatalf("refused forms created something: %d slots, %d goods", len(slots.Slots), len(gs.Goods))
	}
}
