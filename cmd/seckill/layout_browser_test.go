package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/demo"
)

// layoutPage is one page the layout test visits, as the user who sees it.
type layoutPage struct {
	user, path string
}

// layoutFixture starts the demo shop with real data on every main table: a
// live and an upcoming slot, paid, unpaid and cancelled orders, coupons
// taken and booked, a red packet opened; all of it flushed to the database.
func layoutFixture(t *testing.T) (*testApp, []layoutPage) {
	t.Helper()
	a := startApp(t, func(c *Config) { c.Demo = true })
	return a, layoutPages(t, a)
}

// layoutPages makes the layout test's data in the demo shop a and lists its pages.
func layoutPages(t *testing.T, a *testApp) []layoutPage {
	t.Helper()
	shopper := a.login(demo.Shopper, demo.ShopperPassword)
	merchant := a.login(demo.Merchant, demo.MerchantPassword)
	var slots struct{ Slots []slotJSON }
	a.call("GET", "/api/admin/slots", merchant, nil, &slots)
	if len(slots.Slots) < 2 {
		t.Fatalf("the demo has %d slots, want a live and an upcoming one", len(slots.Slots))
	}
	live := slots.Slots[0]
	for _, s := range slots.Slots {
		if s.StartAt.Before(time.Now()) {
			live = s
		}
	}
	var goods struct{ Goods []goodsJSON }
	a.call("GET", fmt.Sprintf("/api/slots/%d/goods", live.ID), "", nil, &goods)
	if len(goods.Goods) < 2 {
		t.Fatal("the demo's live slot has too few goods")
	}
	paid := a.grab(shopper, goods.Goods[0].ID)
	if st, _ := a.pay(shopper, paid.ID, 0); st != 200 {
		t.Fatalf("pay order %d: %d", paid.ID, st)
	}
	unpaid := a.grab(shopper, goods.Goods[1].ID) // a countdown in My orders
	var coupons struct{ Coupons []couponJSON }
	a.call("GET", "/api/coupons", "", nil, &coupons)
	for _, c := range coupons.Coupons {
		a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", c.ID), shopper, nil, nil)
		a.call("PUT", fmt.Sprintf("/api/coupons/%d/reminders", c.ID), shopper, map[string]any{"minutes_before": 5, "channel": "inbox"}, nil)
	}
	var rps struct{ Redpackets []rpJSON }
	a.call("GET", "/api/redpackets", "", nil, &rps)
	if len(rps.Redpackets) == 0 {
		t.Fatal("the demo has no red packets")
	}
	a.call("POST", fmt.Sprintf("/api/redpackets/%d/grab", rps.Redpackets[0].ID), shopper, nil, nil)
	if err := a.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	var upcoming struct{ Goods []goodsJSON }
	for _, sl := range slots.Slots {
		if sl.StartAt.After(time.Now()) {
			a.call("GET", fmt.Sprintf("/api/slots/%d/goods", sl.ID), "", nil, &upcoming)
			break
		}
	}
	if len(upcoming.Goods) == 0 {
		t.Fatal("the demo's upcoming slot has no goods")
	}
	var cp int64
	if len(coupons.Coupons) > 0 {
		cp = coupons.Coupons[0].ID
	}
	s, m, ad := demo.Shopper, demo.Merchant, a.Config.AdminUsername
	return []layoutPage{
		{s, "/"}, {s, "/slots"}, {s, fmt.Sprintf("/goods/%d", goods.Goods[0].ID)}, {s, fmt.Sprintf("/goods/%d", upcoming.Goods[0].ID)}, {s, "/me/orders"},
		{s, fmt.Sprintf("/orders/%d/checkout", unpaid.ID)}, {s, "/coupons"}, {s, "/me/coupons"}, {s, "/me/reminders"},
		{s, "/me/notifications"}, {s, "/settings"}, {s, "/redpackets"}, {s, fmt.Sprintf("/redpackets/%d", rps.Redpackets[0].ID)},
		{s, "/me/wallet"}, {s, fmt.Sprintf("/orders/%d/receipt", paid.ID)}, {s, fmt.Sprintf("/orders/%d/refund", paid.ID)},
		{s, fmt.Sprintf("/orders/%d/cancel", unpaid.ID)},
		{m, "/admin"}, {m, "/admin/orders"}, {m, fmt.Sprintf("/admin/orders/%d", paid.ID)}, {m, fmt.Sprintf("/admin/orders/%d/refund", paid.ID)},
		{m, fmt.Sprintf("/admin/redpackets/%d/grabs", rps.Redpackets[0].ID)}, {m, fmt.Sprintf("/admin/coupons/%d/claims", cp)}, {m, "/admin/slots"}, {m, fmt.Sprintf("/admin/slots/%d", live.ID)},
		{m, fmt.Sprintf("/admin/goods/%d", goods.Goods[0].ID)}, {m, "/admin/coupons"}, {m, fmt.Sprintf("/admin/coupons/%d", cp)},
		{m, "/admin/redpackets"}, {m, fmt.Sprintf("/admin/redpackets/%d", rps.Redpackets[0].ID)}, {m, "/admin/audit"},
		{ad, "/admin"}, {ad, "/admin/users"},
	}
}

// layoutPasswords are the layout test's sign-ins.
func layoutPasswords(a *testApp) map[string]string {
	return map[string]string{demo.Shopper: demo.ShopperPassword, demo.Merchant: demo.MerchantPassword, a.Config.AdminUsername: testAdminPassword}
}

// visitAll logs in as each page's user in turn and runs check on each page.
func visitAll(t *testing.T, ctx context.Context, a *testApp, pages []layoutPage, check func(p layoutPage)) {
	t.Helper()
	passwords, who := layoutPasswords(a), ""
	for _, p := range pages {
		if p.user != who {
			browse(t, ctx, "sign in as "+p.user,
				chromedp.ActionFunc(func(ctx context.Context) error { return network.ClearBrowserCookies().Do(ctx) }),
				browserLogin(ctx, a.URL, p.user, passwords[p.user]))
			who = p.user
		}
		for i, step := range []chromedp.Action{
			chromedp.Navigate(a.URL + p.path),
			chromedp.WaitVisible(`main`, chromedp.ByQuery),
			chromedp.Poll(`document.readyState === "complete" && document.fonts.status === "loaded"`, nil),
		} {
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := chromedp.Run(sctx, step)
			cancel()
			if err != nil {
				t.Fatalf("%s step %d: %v", p.path, i, err)
			}
		}
		check(p)
	}
}

// wrappedCellsJS lists the visible table cells at this width in which a
// number, a badge, a countdown or a time breaks over two lines: each such
// piece (and each word with a digit in it) must lie on one line, and a cell
// holding nothing else (one token, a badge, a time) must be one line tall:
// its content's height is compared with its line-height.
const wrappedCellsJS = `(() => {
  const bad = [];
  const oneLine = (rects) => {
    rects = Array.from(rects).filter((r) => r.width > 0 && r.height > 0);
    if (rects.length < 2) return true;
    const maxTop = Math.max(...rects.map((r) => r.top)), minBottom = Math.min(...rects.map((r) => r.bottom));
    return maxTop < minBottom - 1;
  };
  const name = (td) => (td.closest("table").dataset.testid || "table") + " › " + td.innerText.trim().replace(/\s+/g, " ").slice(0, 40);
  document.querySelectorAll("td").forEach((td) => {
    if (!td.offsetParent) return;
    const pieces = Array.from(td.querySelectorAll(".badge, .countdown, time")).filter((el) => el.offsetParent);
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.textContent.matchAll(/\S*\d\S*/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        pieces.push(r);
      }
    }
    if (pieces.length === 0) return;
    for (const p of pieces) {
      if (!oneLine(p.getClientRects())) { bad.push(name(td) + ": «" + String(p.textContent ?? p.toString()).trim().slice(0, 30) + "» wraps"); return; }
    }
    if (td.querySelector("br, div, p, ul, ol, form, button, .button, input, select, textarea, small, img, svg, details")) return;
    const text = td.innerText.trim();
    const short = /^\S+$/.test(text) || td.querySelector(".badge, .countdown, time") && td.children.length === 1 && td.firstElementChild.innerText.trim() === text;
    if (!short) return;
    const cs = getComputedStyle(td);
    let line = parseFloat(cs.lineHeight);
    if (isNaN(line)) line = 1.25 * parseFloat(cs.fontSize);
    const all = document.createRange();
    all.selectNodeContents(td);
    const h = all.getBoundingClientRect().height;
    if (h > 1.6 * line) bad.push(name(td) + ": " + Math.round(h) + "px tall, a line is " + Math.round(line) + "px");
  });
  return bad;
})()`

// At 1366×900 no number, badge, countdown or time in a table of the main
// pages breaks over two lines.
func TestLayoutTablesDoNotWrapAtDesktop(t *testing.T) {
	ctx := newBrowser(t)
	a, pages := layoutFixture(t)
	browse(t, ctx, "desktop size", chromedp.EmulateViewport(1366, 900))
	cells := 0
	visitAll(t, ctx, a, pages, func(p layoutPage) {
		var bad []string
		var n int
		browse(t, ctx, "measure "+p.path, chromedp.Evaluate(wrappedCellsJS, &bad), chromedp.Evaluate(`document.querySelectorAll("td").length`, &n))
		cells += n
		if len(bad) > 0 {
			t.Errorf("%s as %s at 1366 px: %d cells wrap:\n  %s", p.path, p.user, len(bad), strings.Join(bad, "\n  "))
		}
	})
	if cells < 50 {
		t.Fatalf("only %d table cells on the main pages: the fixture has too little data to test", cells)
	}
}

// At 390×844 (a phone) no main page is wider than the screen, and the
// merchant's tables are cards whose cells say what they hold.
func TestLayoutPagesFitAPhone(t *testing.T) {
	ctx := newBrowser(t)
	a, pages := layoutFixture(t)
	browse(t, ctx, "phone size", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	visitAll(t, ctx, a, pages, func(p layoutPage) {
		var fit struct {
			Scroll, Inner int
			Wide          []string
			Unlabelled    []string
		}
		browse(t, ctx, "measure "+p.path, chromedp.Evaluate(`(() => {
		  const inner = window.innerWidth;
		  const wide = Array.from(document.querySelectorAll("body *")).filter((el) => {
		    const r = el.getBoundingClientRect();
		    return r.width > 0 && r.right > 391 && !el.closest("table:not(.stack), .tabs, .table-scroll");
		  }).slice(0, 5).map((el) => el.tagName.toLowerCase() + (el.dataset.testid ? "[" + el.dataset.testid + "]" : "") + " right " + Math.round(el.getBoundingClientRect().right));
		  const unlabelled = location.pathname.startsWith("/admin") ? Array.from(document.querySelectorAll("main table")).filter((tb) => !tb.classList.contains("stack") || Array.from(tb.querySelectorAll("tbody td")).some((td) => td.offsetParent && !td.dataset.label && !td.classList.contains("actions") && td.innerText.trim() !== "")).map((tb) => tb.dataset.testid || "table") : [];
		  return {Scroll: document.documentElement.scrollWidth, Inner: inner, Wide: wide, Unlabelled: unlabelled};
		})()`, &fit))
		// A phone shrinks a page wider than the screen to fit, widening
		// innerWidth with it: both must stay at the screen's 390 px.
		if fit.Scroll > fit.Inner || fit.Inner != 390 {
			t.Errorf("%s as %s at 390 px: the page is %d px wide in a %d px window; too wide: %v", p.path, p.user, fit.Scroll, fit.Inner, fit.Wide)
		}
		if len(fit.Unlabelled) > 0 {
			t.Errorf("%s at 390 px: admin tables not shown as labelled cards: %v", p.path, fit.Unlabelled)
		}
	})
}

// tapTargetsJS lists the controls on the page a finger cannot hit (under
// 32 px tall) and the texts their box cuts off. A control is a button, a
// field, a select, a link styled as a button or standing on its own (in a
// menu, a cell, a list item); a link inside a sentence is text and exempt,
// as WCAG 2.5.8 exempts it. A checkbox or radio is measured by its label.
// Cut: a box whose text runs past its width while it hides the overflow
// (an ellipsis included), and a placeholder wider than its field.
const tapTargetsJS = `(() => {
  const small = [], cut = [];
  const visible = (el) => { const r = el.getBoundingClientRect(); const cs = getComputedStyle(el); return r.width > 0 && r.height > 0 && cs.visibility !== "hidden"; };
  const name = (el) => el.tagName.toLowerCase() + (el.dataset.testid ? "[" + el.dataset.testid + "]" : "") + " «" + (el.innerText || el.value || el.placeholder || el.getAttribute("aria-label") || "").trim().replace(/\s+/g, " ").slice(0, 30) + "»";
  const inSentence = (a) => {
    if (a.classList.contains("button")) return false;
    const p = a.parentElement;
    if (!p || p.closest("nav, .tabs, .account, .actions")) return false;
    const own = a.innerText.trim(), all = p.innerText.trim();
    return all.length > own.length + 2 && !/^(TD|TH|LI)$/.test(p.tagName);
  };
  document.querySelectorAll("main a[href], header a[href], button, input:not([type=hidden]), select, textarea, summary").forEach((el) => {
    if (el.disabled || el.closest("[hidden], template, .sr-only")) return;
    let target = el;
    if (el.matches("input[type=checkbox], input[type=radio]")) target = el.closest("label") || (el.id && document.querySelector("label[for='" + el.id + "']")) || el;
    if (!visible(target)) return;
    if (el.tagName === "A" && inSentence(el)) return;
    const h = target.getBoundingClientRect().height;
    if (h < 31.5) small.push(name(el) + " " + Math.round(h) + "px tall");
  });
  document.querySelectorAll("main *, header *").forEach((el) => {
    if (!visible(el) || el.children.length > 0 && !el.matches("button, a, label, select")) return;
    const cs = getComputedStyle(el);
    const hides = cs.textOverflow === "ellipsis" || /hidden|clip/.test(cs.overflowX) || el.matches("button, select");
    if (hides && el.scrollWidth > el.clientWidth + 1 && (el.innerText || "").trim()) cut.push(name(el) + " needs " + el.scrollWidth + "px of " + el.clientWidth);
  });
  const ctx = document.createElement("canvas").getContext("2d");
  document.querySelectorAll("input[placeholder], textarea[placeholder]").forEach((el) => {
    if (!visible(el) || el.value) return;
    const cs = getComputedStyle(el);
    ctx.font = cs.font;
    const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const need = ctx.measureText(el.placeholder).width;
    if (need > room + 1) cut.push(name(el) + " placeholder needs " + Math.round(need) + "px of " + Math.round(room));
  });
  return {small, cut};
})()`

// At 1366×900 and at 390×844 every control of the main pages is at least
// 32 px tall and no text is cut off by its box.
func TestLayoutTapTargetsAndNothingCut(t *testing.T) {
	ctx := newBrowser(t)
	a, pages := layoutFixture(t)
	for _, size := range []struct {
		w, h   int
		mobile bool
	}{{1366, 900, false}, {390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		browse(t, ctx, fmt.Sprintf("%d px", size.w), chromedp.EmulateViewport(int64(size.w), int64(size.h), opts...))
		visitAll(t, ctx, a, pages, func(p layoutPage) {
			var got struct{ Small, Cut []string }
			browse(t, ctx, "measure "+p.path, chromedp.Evaluate(tapTargetsJS, &got))
			if len(got.Small) > 0 {
				t.Errorf("%s as %s at %d px: %d controls under 32 px:\n  %s", p.path, p.user, size.w, len(got.Small), strings.Join(got.Small, "\n  "))
			}
			if len(got.Cut) > 0 {
				t.Errorf("%s as %s at %d px: text cut off:\n  %s", p.path, p.user, size.w, strings.Join(got.Cut, "\n  "))
			}
		})
	}
}
