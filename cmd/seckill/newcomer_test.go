package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/seckill/seckill/db/demo"
)

// announce is what Main prints on start.
func announce(t *testing.T, a *testApp) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	a.Announce()
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	return string(out)
}

// With the demo on, the start banner lists every account to sign in with,
// the demo merchant included, each with its password; without it, none.
func TestAnnounceListsEveryDemoAccount(t *testing.T) {
	out := announce(t, startApp(t, func(c *Config) { c.Demo = true }))
	for _, want := range []string{
		"admin      admin / the configured ADMIN_PASSWORD",
		"merchant   " + demo.Merchant + " / " + demo.MerchantPassword,
		"shopper    " + demo.Shopper + " / " + demo.ShopperPassword,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner lacks %q:\n%s", want, out)
		}
	}
	if out := announce(t, startApp(t)); strings.Contains(out, demo.MerchantPassword) || !strings.Contains(out, "DEMO=true") {
		t.Errorf("without the demo the banner names demo accounts or does not say how to get them:\n%s", out)
	}
}

// Asynqmon's page carries a bar back to the dashboard and the shop; its API
// answers stay as Asynqmon wrote them.
func TestMonitorLeadsBackToTheShop(t *testing.T) {
	a := startApp(t)
	get := func(path string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+a.adminToken())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	for _, path := range []string{"/monitor/", "/monitor/queues/default"} {
		res, body := get(path)
		if res.StatusCode != 200 || !strings.Contains(body, `<a href="/admin" data-testid="monitor-back"`) ||
			!strings.Contains(body, `<a href="/" data-testid="monitor-shop"`) || !strings.Contains(body, `<div id="root">`) {
			t.Errorf("%s: %d, no bar back to the shop beside Asynqmon's app:\n%.400s", path, res.StatusCode, body)
		}
	}
	res, body := get("/monitor/api/queues")
	var queues struct{ Queues []json.RawMessage }
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &queues) != nil || strings.Contains(body, "monitor-back") {
		t.Errorf("Asynqmon's API changed: %d %.200s", res.StatusCode, body)
	}
}

// The demo shop has something to look at: each goods has a picture of its
// own (an SVG the project drew, served as one), none the grey placeholder,
// and its words read in Chinese as in English.
func TestDemoGoodsHavePicturesAndBothLanguages(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	var slots struct {
		Slots []struct {
			ID    int64
			Title string
		}
	}
	if st := a.call("GET", "/api/slots", "", nil, &slots); st != 200 || len(slots.Slots) < 2 {
		t.Fatalf("the demo's slots: %d %+v", st, slots)
	}
	seen := map[string]bool{}
	for _, sl := range slots.Slots {
		if !strings.Contains(sl.Title, "秒杀") && !strings.Contains(sl.Title, "开抢") {
			t.Errorf("slot %q has no Chinese", sl.Title)
		}
		var list struct {
			Goods []struct {
				ID          int64
				Title       string
				Description string
				ImageURL    string `json:"image_url"`
			}
		}
		a.call("GET", "/api/slots/"+strconv.FormatInt(sl.ID, 10)+"/goods", "", nil, &list)
		for _, g := range list.Goods {
			if g.ImageURL == "" || seen[g.ImageURL] {
				t.Errorf("goods %q: picture %q (a placeholder, or another goods' picture)", g.Title, g.ImageURL)
				continue
			}
			seen[g.ImageURL] = true
			if !hasHan(g.Title) || !hasHan(g.Description) {
				t.Errorf("goods %q (%q) has no Chinese", g.Title, g.Description)
			}
			r := send(t, "GET", a.URL+g.ImageURL, nil, nil)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "image/svg+xml") || !strings.Contains(string(r.body), "<svg") {
				t.Errorf("GET %s: %d %q", g.ImageURL, r.status, r.header.Get("Content-Type"))
			}
		}
		page := send(t, "GET", a.URL+"/slots/"+strconv.FormatInt(sl.ID, 10), nil, nil)
		if strings.Contains(string(page.body), `data-testid="goods-placeholder-`) {
			t.Errorf("slot %d's page shows the grey placeholder", sl.ID)
		}
	}
	if len(seen) < 8 {
		t.Errorf("%d demo goods with pictures, want 8", len(seen))
	}
}

// hasHan reports whether s holds a Chinese character.
func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}
