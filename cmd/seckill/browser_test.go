package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// An admin logs in through the form and sees the dashboard with the monitor link.
func TestBrowserAdminDashboard(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	var who, href, heading string
	err := chromedp.Run(ctx,
		browserLogin(ctx, a.URL, "admin", testAdminPassword),
		chromedp.WaitVisible(`[data-testid=admin-dashboard]`),
		chromedp.Text(`[data-testid=whoami]`, &who),
		chromedp.Text(`[data-testid=admin-dashboard] h1`, &heading),
		chromedp.AttributeValue(`[data-testid=monitor-link]`, "href", &href, nil),
		chromedp.Click(`[data-testid=monitor-link]`),
		chromedp.WaitReady(`body`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if who != "admin" || href != "/monitor" || !strings.Contains(heading, "dashboard") {
		t.Fatalf("dashboard shows user %q, heading %q, monitor link %q", who, heading, href)
	}
	var loc string
	if err := chromedp.Run(ctx, chromedp.Location(&loc)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loc, "/monitor") {
		t.Fatalf("the monitor link led to %s", loc)
	}
}
