package main

import (
	"strings"
	"testing"
)

// A webhook URL on an address that is not global unicast (cloud metadata,
// CGNAT, benchmarking, broadcast, IPv4 hidden in IPv6, ...) is refused with
// 400 invalid and leaves the saved settings as they were.
func TestAbuseSSRFWebhookURL(t *testing.T) {
	a := startApp(t)
	if a.Config.WebhookAllowPrivate {
		t.Fatal("the harness allows private webhook addresses by default")
	}
	tok, _ := a.newUser()
	type settings struct {
		Settings struct {
			Email      string `json:"email"`
			WebhookURL string `json:"webhook_url"`
		} `json:"settings"`
	}
	const good = "https://93.184.215.14/hook"
	var s settings
	if st := a.call("PUT", "/api/me/settings", tok, map[string]string{"email": "a@example.com", "webhook_url": good}, &s); st != 200 || s.Settings.WebhookURL != good {
		t.Fatalf("set a public webhook: %d %+v", st, s)
	}
	for _, bad := range []string{
		"http://100.100.100.200/latest/meta-data/",
		"http://100.64.0.1/",
		"http://198.18.0.1/",
		"http://255.255.255.255/",
		"http://[::127.0.0.1]/",
		"http://[::ffff:127.0.0.1]/",
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://[2002:a9fe:a9fe::1]/",
		"http://[2001::1]/",
		"http://[fd00::1]/",
		"http://[fe80::1%25eth0]/",
		"http://0.0.0.0:3000/",
		"http://169.254.169.254/",
		"http://240.0.0.1/",
		"http://user:pass@93.184.215.14/hook",
		"https://93.184.215.14/" + strings.Repeat("a", 2048),
	} {
		a.wantError("PUT", "/api/me/settings", tok, map[string]string{"email": "b@example.com", "webhook_url": bad}, 400, "invalid")
		s = settings{}
		if st := a.call("GET", "/api/me/settings", tok, nil, &s); st != 200 || s.Settings.WebhookURL != good || s.Settings.Email != "a@example.com" {
			t.Fatalf("after refusing %.60s: %d %+v, want the settings unchanged", bad, st, s)
		}
	}
}
