package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/demo"
)

// brokenWordsJS lists the audit log's cells (who, action, target) in which
// a word breaks over two lines, and the details that still show JSON.
const brokenWordsJS = `(() => {
  const bad = [];
  document.querySelectorAll("[data-testid=audit-log] tbody tr").forEach((tr) => {
    tr.querySelectorAll("[data-testid=audit-actor], [data-testid=audit-action], [data-testid=audit-target]").forEach((td) => {
      const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const re = /\S+/g;
        for (let m = re.exec(n.data); m; m = re.exec(n.data)) {
          const r = document.createRange();
          r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
          const rects = Array.from(r.getClientRects()).filter((x) => x.width > 0);
          if (rects.length > 1 && Math.max(...rects.map((x) => x.top)) >= Math.min(...rects.map((x) => x.bottom)) - 1) bad.push(td.dataset.testid + ": " + m[0]);
        }
      }
    });
    const d = tr.querySelector("[data-testid=audit-detail]");
    if (d && /[{}]|\\u00/.test(d.innerText)) bad.push("detail: " + d.innerText.slice(0, 60));
  });
  return bad;
})()`

// TestAuditBrowser: the audit log reads as words at 1366 and 390, in
// English and in Chinese. The demo
// merchant (a long name) adds goods through the slot page's form and signs
// in; every name, action and target stays whole on one line, the target of
// the goods' creation names the goods with its number, and the detail is
// its fields, not JSON with escapes: named as the form names them, money
// in yuan, choices in words.
func TestAuditBrowser(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	mt := a.login(demo.Merchant, demo.MerchantPassword)
	sl := a.createSlot(mt, time.Hour, 2*time.Hour)
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, demo.Merchant, demo.MerchantPassword))
	title := "Tea <b>pot</b> " + fmt.Sprint(userSeq.Add(1))
	browse(t, ctx, "add goods through the slot page's form",
		chromedp.EmulateViewport(1366, 900),
		chromedp.Navigate(fmt.Sprintf("%s/admin/slots/%d", a.URL, sl.ID)),
		chromedp.WaitVisible(`[data-testid=goods-form]`),
		chromedp.SendKeys(`[data-testid=goods-form] [data-testid=input-title]`, title),
		chromedp.SendKeys(`[data-testid=goods-form] [data-testid=input-price_cents]`, "20.00"),
		chromedp.SendKeys(`[data-testid=goods-form] [data-testid=input-seckill_price_cents]`, "9.90"),
		chromedp.SendKeys(`[data-testid=goods-form] [data-testid=input-stock]`, "5"),
		chromedp.Click(`[data-testid=goods-submit]`),
	)
	var id int64
	eventually(t, 30*time.Second, "the form's goods to be created", func() bool {
		var goods struct{ Goods []goodsJSON }
		a.call("GET", fmt.Sprintf("/api/slots/%d/goods", sl.ID), "", nil, &goods)
		for _, g := range goods.Goods {
			if g.Title == title {
				id = g.ID
			}
		}
		return id != 0
	})
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1366, 900}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) {
			var bad []string
			var target, detail string
			browse(t, ctx, "open the audit log",
				chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(a.URL+"/admin/audit"),
				chromedp.WaitVisible(`[data-testid=audit-log]`),
				chromedp.Evaluate(brokenWordsJS, &bad),
				chromedp.Evaluate(`(() => { const r = [...document.querySelectorAll("[data-testid=audit-log] tbody tr")]
					.find((r) => r.querySelector("[data-testid=audit-action]").title === "goods.create");
					return r ? r.querySelector("[data-testid=audit-target]").innerText.trim() : "" })()`, &target),
				chromedp.Evaluate(`(() => { const r = [...document.querySelectorAll("[data-testid=audit-log] tbody tr")]
					.find((r) => r.querySelector("[data-testid=audit-action]").title === "goods.create");
					return r ? r.querySelector("[data-testid=audit-detail]").innerText : "" })()`, &detail),
			)
			shoot(t, ctx, "audit-"+size.name)
			if len(bad) > 0 {
				t.Errorf("audit log at %d px: %v", size.w, bad)
			}
			if want := fmt.Sprintf("Goods #%d", id); target != want {
				t.Errorf("target of the goods' creation %q, want %q", target, want)
			}
			if !strings.Contains(detail, title) {
				t.Errorf("detail of the goods' creation %q, want the title %q as typed", detail, title)
			}
			auditDetailWords(t, detail, []string{"List price: ¥20.00", "Seckill price: ¥9.90", "Sale mode: First come, first served"})
		})
	}
	// In Chinese at 1366 px: every name and word of the detail is Chinese,
	// the money in yuan.
	var detail string
	browse(t, ctx, "the audit log in Chinese",
		chromedp.EmulateViewport(1366, 900),
		chromedp.Click(`[data-testid=lang-zh-CN]`),
		chromedp.WaitVisible(`html[lang=zh-CN] [data-testid=audit-log]`),
		chromedp.Evaluate(`(() => { const r = [...document.querySelectorAll("[data-testid=audit-log] tbody tr")]
			.find((r) => r.querySelector("[data-testid=audit-action]").dataset.code === "goods.create");
			return r ? r.querySelector("[data-testid=audit-detail]").innerText : "" })()`, &detail),
	)
	auditDetailWords(t, detail, []string{"原价: ¥20.00", "秒杀价: ¥9.90", "销售方式: 先到先得"})
	for _, field := range strings.Split(strings.ReplaceAll(detail, title, ""), "\n") {
		if name, _, _ := strings.Cut(field, ":"); strings.ContainsFunc(name, func(r rune) bool { return r < 0x80 && r > ' ' }) {
			t.Errorf("the Chinese audit log names a field in English: %q", field)
		}
	}
}

// auditDetailWords checks an audit detail says each of want, in the
// reader's words and units, and none of the form's raw names and values.
func auditDetailWords(t *testing.T, detail string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(strings.Join(strings.Fields(detail), " "), w) {
			t.Errorf("audit detail %q does not say %q", detail, w)
		}
	}
	for _, raw := range []string{"cents", "tz offset", "first_come", "_"} {
		if strings.Contains(detail, raw) {
			t.Errorf("audit detail %q shows %q", detail, raw)
		}
	}
}
