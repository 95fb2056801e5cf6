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

// Asynqmon on a phone (390 px) starts with its sidebar folded, so its
// queues have the width; the bar back to the shop is there.
func TestBrowserMonitorOnPhone(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	var drawer, main float64
	browse(t, ctx, "phone size", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, "admin", testAdminPassword))
	browse(t, ctx, "open Asynqmon", chromedp.Navigate(a.URL+"/monitor"))
	until(t, ctx, "Asynqmon's sidebar and the bar back", `!!document.querySelector(".MuiDrawer-paper") && !!document.querySelector("[data-testid=monitor-back]")`)
	browse(t, ctx, "measure",
		chromedp.Evaluate(`document.querySelector(".MuiDrawer-paper").getBoundingClientRect().width`, &drawer),
		chromedp.Evaluate(`innerWidth - document.querySelector(".MuiDrawer-paper").getBoundingClientRect().right`, &main),
	)
	if drawer > 80 || main < 300 {
		t.Fatalf("Asynqmon at 390 px: sidebar %.0f px wide, %.0f px left for the queues", drawer, main)
	}
}
