package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

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
