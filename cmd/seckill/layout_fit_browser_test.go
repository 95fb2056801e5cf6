package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/demo"
)

// fitPages are the pages the fit test visits: every page of the language
// test (the main pages of the demo shop, the fair sales', the admin's and
// the anonymous ones), a drawn raffle with its proof, and the merchant's
// confirmations.
func fitPages(t *testing.T, a *testApp) []layoutPage {
	t.Helper()
	shopper := a.login(demo.Shopper, demo.ShopperPassword)
	mt, drawn := a.raffleGoods(2, 5*time.Minute)
	a.enterRaffle(shopper, drawn.ID, 201)
	for range 2 {
		tok, _ := a.newUser()
		a.enterRaffle(tok, drawn.ID, 201)
	}
	a.advance(6 * time.Minute)
	eventually(t, 20*time.Second, "the worker's sweep draws the raffle", func() bool { return a.raffleDraw(drawn.ID).Seed != "" })
	var slots struct{ Slots []slotJSON }
	a.call("GET", "/api/admin/slots", mt, nil, &slots)
	pages := i18nPages(t, a)
	m := demo.Merchant
	pages = append(pages,
		layoutPage{demo.Shopper, fmt.Sprintf("/goods/%d/raffle", drawn.ID)},
		layoutPage{demo.Shopper, fmt.Sprintf("/goods/%d", drawn.ID)},
		layoutPage{a.Config.AdminUsername, fmt.Sprintf("/admin/goods/%d", drawn.ID)},
	)
	for _, p := range pages {
		if p.user == m && strings.HasPrefix(p.path, "/admin/goods/") {
			pages = append(pages, layoutPage{m, p.path + "/end"})
		}
		if p.user == m && strings.HasPrefix(p.path, "/admin/slots/") {
			pages = append(pages, layoutPage{m, p.path + "/end"})
		}
	}
	return pages
}

// fitJS measures the page in the window: how wide it is against the
// window; the texts squeezed into a column so narrow that they stand one
// or two characters a line (or in a box under 3em holding more than two
// characters, over several lines); and the panels, tiles and blocks that
// overlap a sibling.
const fitJS = `(() => {
  const win = WINDOW_WIDTH;
  const out = {Scroll: document.scrollingElement.scrollWidth, Inner: window.innerWidth, Wide: [], Squeezed: [], Overlaps: [], Boxed: [], Alone: []};
  const name = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.dataset && el.dataset.testid) s += "[" + el.dataset.testid + "]";
    else if (typeof el.className === "string" && el.className.trim()) s += "." + el.className.trim().split(/\s+/).join(".");
    return s + " «" + (el.innerText || el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 30) + "»";
  };
  if (out.Scroll > win || out.Inner !== win) {
    const over = Array.from(document.querySelectorAll("body *")).filter((el) => el.getBoundingClientRect().right > win + 1 && el.getBoundingClientRect().width > 0);
    out.Wide = over.filter((el) => !over.some((c) => c !== el && el.contains(c))).slice(0, 5).map((el) => name(el) + " right " + Math.round(el.getBoundingClientRect().right));
  }
  const inline = (cs) => /^inline/.test(cs.display) || cs.display === "contents" || cs.display === "ruby";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest("script, style, template, noscript, [hidden]")) continue;
    const chars = Array.from(n.data.replace(/\s+/g, "")).length;
    if (chars < 2) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === "hidden") continue;
    const r = document.createRange();
    r.selectNodeContents(n);
    const rects = Array.from(r.getClientRects()).filter((x) => x.width > 0 && x.height > 0).sort((x, y) => x.top - y.top);
    let lines = 0, bottom = -Infinity;
    for (const x of rects) { if (x.top >= bottom - 2) { lines++; bottom = x.bottom; } else bottom = Math.max(bottom, x.bottom); }
    if (lines < 2) continue;
    let box = el;
    while (box.parentElement && inline(getComputedStyle(box))) box = box.parentElement;
    const bcs = getComputedStyle(box);
    const width = box.clientWidth - parseFloat(bcs.paddingLeft) - parseFloat(bcs.paddingRight);
    const em = parseFloat(bcs.fontSize);
    if (width < 3 * em) {
      if (seen.has(box)) continue;
      seen.add(box);
      out.Squeezed.push(name(box) + ": " + chars + " characters on " + lines + " lines, " + Math.round(width) + " px wide");
    }
  }
  const flow = (el) => {
    const cs = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    return !inline(cs) && cs.display !== "none" && !/absolute|fixed/.test(cs.position) && cs.float === "none" && cs.visibility !== "hidden" && r.width > 0 && r.height > 0 && !/^(TR|TD|TH|TBODY|THEAD|TFOOT|COL|COLGROUP|CAPTION)$/.test(el.tagName) || false;
  };
  // What a box shows: its border box when it paints a background, a
  // border or a shadow; else its content (a link's padding, which widens
  // what a finger hits, shows nothing).
  const paints = (el) => {
    const cs = getComputedStyle(el);
    return cs.backgroundColor !== "rgba(0, 0, 0, 0)" || cs.backgroundImage !== "none" || cs.boxShadow !== "none" ||
      ["Top", "Right", "Bottom", "Left"].some((s) => parseFloat(cs["border" + s + "Width"]) > 0);
  };
  const shown = (el) => {
    const cs = getComputedStyle(el), r = el.getBoundingClientRect();
    if (paints(el)) return r;
    const px = (k) => parseFloat(cs[k]) || 0;
    return {left: r.left + px("paddingLeft"), right: r.right - px("paddingRight"), top: r.top + px("paddingTop"), bottom: r.bottom - px("paddingBottom")};
  };
  document.querySelectorAll("header, header *, main, main *").forEach((parent) => {
    const kids = Array.from(parent.children).filter(flow);
    for (let i = 0; i < kids.length; i++) {
      const a = shown(kids[i]);
      for (let j = i + 1; j < kids.length; j++) {
        const b = shown(kids[j]);
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) out.Overlaps.push(name(kids[i]) + " and " + name(kids[j]) + " overlap by " + Math.round(w) + "×" + Math.round(h) + " px");
      }
    }
  });
  // Painted panels (cards, tiles, forms) anywhere in the page: none lies
  // over another, and cards keep a gap between them, in one grid or two.
  const panels = Array.from(document.querySelectorAll("main *")).filter((el) => flow(el) && paints(el) && el.matches(".card, .tile, section, article, fieldset, figure, form, table, details, pre"));
  for (let i = 0; i < panels.length; i++) {
    const a = panels[i].getBoundingClientRect();
    for (let j = i + 1; j < panels.length; j++) {
      if (panels[i].contains(panels[j]) || panels[j].contains(panels[i])) continue;
      const b = panels[j].getBoundingClientRect();
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) { out.Overlaps.push(name(panels[i]) + " and " + name(panels[j]) + " overlap by " + Math.round(w) + "×" + Math.round(h) + " px"); continue; }
      if (!panels[i].matches(".card, .tile") || !panels[j].matches(".card, .tile")) continue;
      if (w > 1 && h > -6 || h > 1 && w > -6) out.Overlaps.push(name(panels[i]) + " and " + name(panels[j]) + " are " + Math.round(-Math.min(w, h)) + " px apart");
    }
  }
  // Nothing scrolls sideways inside its own box on the way to its content
  // but a code block: tab strips wrap, tables turn to cards.
  document.querySelectorAll("main *, header *").forEach((el) => {
    if (el.closest("pre")) return;
    const cs = getComputedStyle(el);
    if (/auto|scroll/.test(cs.overflowX) && el.scrollWidth > el.clientWidth + 1 && el.getBoundingClientRect().width > 0) out.Boxed.push(name(el) + " holds " + el.scrollWidth + " px in " + el.clientWidth);
  });
  // A grid of tiles leaves no tile alone on a row under a full one.
  document.querySelectorAll("main .grid").forEach((g) => {
    const kids = Array.from(g.children).filter((k) => k.matches(".tile") && k.getBoundingClientRect().width > 0);
    if (kids.length < 3) return;
    const rows = new Map();
    kids.forEach((k) => { const top = Math.round(k.getBoundingClientRect().top); rows.set(top, (rows.get(top) || 0) + 1); });
    const counts = Array.from(rows.values());
    if (counts.length > 1 && counts[counts.length - 1] === 1 && counts[0] > 2) out.Alone.push(name(kids[kids.length - 1]) + " alone under rows of " + counts[0]);
  });
  return out;
})()`

// On every page a user can reach, as shopper, merchant and admin, in
// English and in Chinese, at 1366×900 and on a phone at 390×844: the page
// does not scroll sideways (wide things wrap or scroll in their own box),
// no text is squeezed into a column one or two characters wide, and no
// panel, tile or block overlaps its neighbour.
func TestLayoutFitsEveryPageAndLanguage(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	pages := fitPages(t, a)
	passwords := layoutPasswords(a)
	for _, lang := range []string{"en", "zh-CN"} {
		for _, size := range []struct {
			w, h   int64
			mobile bool
		}{{1366, 900, false}, {390, 844, true}} {
			t.Run(fmt.Sprintf("%s-%d", lang, size.w), func(t *testing.T) {
				ctx := newBrowser(t)
				opts := []chromedp.EmulateViewportOption{}
				if size.mobile {
					opts = append(opts, chromedp.EmulateMobile)
				}
				browse(t, ctx, "window size", chromedp.EmulateViewport(size.w, size.h, opts...))
				who := "-"
				for _, p := range pages {
					if p.user != who {
						browse(t, ctx, "sign out", chromedp.ActionFunc(func(ctx context.Context) error { return network.ClearBrowserCookies().Do(ctx) }))
						if p.user != "" {
							browse(t, ctx, "sign in as "+p.user, browserLogin(ctx, a.URL, p.user, passwords[p.user]))
						}
						who = p.user
					}
					fitOpen(t, ctx, a.URL+p.path, lang)
					var got struct {
						Scroll, Inner            int
						Wide, Squeezed, Overlaps []string
						Boxed, Alone             []string
					}
					browse(t, ctx, "measure "+p.path, chromedp.Evaluate(strings.Replace(fitJS, "WINDOW_WIDTH", fmt.Sprint(size.w), 1), &got))
					at := fmt.Sprintf("%s as %q in %s at %d px", p.path, p.user, lang, size.w)
					if got.Scroll > got.Inner || got.Inner != int(size.w) {
						t.Errorf("%s: the page is %d px wide in a %d px window; too wide: %v", at, got.Scroll, got.Inner, got.Wide)
					}
					if len(got.Squeezed) > 0 {
						t.Errorf("%s: text squeezed:\n  %s", at, strings.Join(got.Squeezed, "\n  "))
					}
					if len(got.Boxed) > 0 {
						t.Errorf("%s: scrolls sideways inside a box:\n  %s", at, strings.Join(got.Boxed, "\n  "))
					}
					if len(got.Alone) > 0 {
						t.Errorf("%s: %v", at, got.Alone)
					}
					if len(got.Overlaps) > 0 {
						t.Errorf("%s: overlapping blocks:\n  %s", at, strings.Join(got.Overlaps, "\n  "))
					}
				}
			})
		}
	}
}

// fitOpen opens the page in the language, switching to it with the page's
// own switch when the page is in the other one, waits for it to settle,
// and opens every folded section (details), as a curious reader does.
func fitOpen(t *testing.T, ctx context.Context, url, lang string) {
	t.Helper()
	settled := `document.readyState === "complete" && document.fonts.status === "loaded" && !!document.querySelector("main")`
	// The switch's own form, posted from the page: the language is kept on
	// the account (or the anonymous reader's cookie), and the page opened again.
	switchLang := fmt.Sprintf(`(async () => {
	  const b = document.querySelector("[data-testid=lang-%s]");
	  if (!b) return false;
	  const f = new URLSearchParams(new FormData(b.form));
	  f.set("lang", b.value);
	  await fetch(b.form.action, {method: "POST", body: f, redirect: "manual", credentials: "same-origin"});
	  return true;
	})()`, lang)
	var switched bool
	// A page's own script may replace the document as it settles (a
	// redirect, a reload): the wait asks again in the new one.
	wait := func(cond string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			for {
				var ok bool
				if err := chromedp.Evaluate(cond, &ok).Do(ctx); err == nil && ok {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	open := []chromedp.Action{chromedp.Navigate(url), wait(settled)}
	for i, step := range []chromedp.Action{
		chromedp.Tasks(open),
		chromedp.ActionFunc(func(ctx context.Context) error {
			var here string
			if err := chromedp.Evaluate(`document.documentElement.lang`, &here).Do(ctx); err != nil || here == lang {
				return err
			}
			if err := chromedp.Evaluate(switchLang, &switched, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }).Do(ctx); err != nil {
				return err
			}
			return chromedp.Tasks(open).Do(ctx)
		}),
		wait(fmt.Sprintf(`document.documentElement.lang === %q`, lang)),
		chromedp.Evaluate(`document.querySelectorAll("details").forEach((d) => { d.open = true; })`, nil),
	} {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Run(sctx, step)
		cancel()
		if err != nil {
			t.Fatalf("%s in %s, step %d: %v", url, lang, i, err)
		}
	}
}
