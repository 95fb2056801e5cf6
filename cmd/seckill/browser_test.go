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
// queues have the width; the bar back to the shop is there, in the end of
// Asynqmon's top bar where it covers nothing (not over its logo, nor over
// the page below), and the dashboard's charts are wide enough to read.
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
	until(t, ctx, "Asynqmon's charts", `document.querySelectorAll(".recharts-responsive-container").length >= 2`)
	var bar struct {
		Covers []string
		Charts []float64
	}
	browse(t, ctx, "measure the bar and the charts", chromedp.Evaluate(`(() => {
	  const bar = document.querySelector("[data-testid=monitor-back-bar]").getBoundingClientRect();
	  const head = document.querySelector("header").getBoundingClientRect();
	  const covers = [];
	  if (bar.bottom > head.bottom || bar.top < head.top) covers.push("the page below Asynqmon's top bar (bar " + Math.round(bar.top) + "–" + Math.round(bar.bottom) + " px, top bar " + Math.round(head.top) + "–" + Math.round(head.bottom) + " px)");
	  document.querySelectorAll("header *").forEach((el) => {
	    if (el.children.length > 0 && !el.matches("img, svg, button, a")) return;
	    const r = el.getBoundingClientRect();
	    // 4 px clear of anything of Asynqmon's, as a finger and an eye need.
	    if (r.width > 0 && Math.min(r.right, bar.right + 4) - Math.max(r.left, bar.left - 4) > 0 && Math.min(r.bottom, bar.bottom) - Math.max(r.top, bar.top) > 0) covers.push(el.tagName.toLowerCase() + " of Asynqmon's top bar");
	  });
	  return {Covers: covers, Charts: Array.from(document.querySelectorAll(".recharts-responsive-container")).map((c) => c.getBoundingClientRect().width)};
	})()`, &bar))
	if len(bar.Covers) > 0 {
		t.Errorf("Asynqmon at 390 px: the bar back covers %v", bar.Covers)
	}
	for _, w := range bar.Charts {
		if w < 250 {
			t.Errorf("Asynqmon at 390 px: charts %v px wide, too narrow to read", bar.Charts)
			break
		}
	}
}
