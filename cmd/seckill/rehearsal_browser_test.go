package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A merchant marks a slot as a rehearsal on the new-slot form, and deletes
// their own rehearsal from its page (after ticking that they mean it), at
// 1366 and at 390 px, in English and in Chinese: the page says who may
// delete it and that spent coupons come back, the slot is gone, and the
// coupon a shopper spent on a rehearsal order is theirs to use again.
func TestRehearsalFormAndDeleteBrowser(t *testing.T) {
	a := startApp(t)
	name := fmt.Sprintf("rehm%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	mt := a.login(name, "password123")
	shopper, _ := a.newUser()
	deal := a.couponTemplate(mt, "amount_off", 500, 0, 7)
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	words := map[string]struct{ who, done string }{
		"en":    {"The merchant who made it, or an admin, can delete it", "The rehearsal was deleted with everything it made"},
		"zh-CN": {"创建它的商家或管理员可以连同它产生的一切一起删除", "演练已连同它产生的一切删除"},
	}
	for _, lang := range []string{"en", "zh-CN"} {
		for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
			what := fmt.Sprintf("%s at %d px", lang, size.w)
			var shown string
			browse(t, ctx, what, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(a.URL+"/admin/slots"),
				chromedp.WaitVisible(`[data-testid=slot-form]`), chromedp.Evaluate(`document.documentElement.lang`, &shown))
			if shown != lang {
				browse(t, ctx, "switch to "+lang, chromedp.Click(`[data-testid=lang-`+lang+`]`, chromedp.ByQuery),
					chromedp.WaitVisible(`html[lang=`+lang+`] [data-testid=slot-form]`))
			}
			// The form makes a rehearsal.
			var path string
			browse(t, ctx, what+": a rehearsal from the form",
				chromedp.SendKeys(`[data-testid=slot-form] [data-testid=input-title]`, "Dry run "+lang),
				chromedp.Click(`[data-testid=slot-rehearsal]`),
				chromedp.Click(`[data-testid=slot-submit]`),
				chromedp.WaitVisible(`[data-testid=admin-slot] [data-testid=rehearsal-badge]`),
				chromedp.WaitVisible(`[data-testid=rehearsal-delete-form]`),
				chromedp.Evaluate(`location.pathname`, &path),
			)
			if path == "/admin/slots" {
				t.Fatalf("%s: the form did not make the slot", what)
			}

			// A live rehearsal where a shopper spent a coupon, deleted from its page.
			sl := a.createRehearsal(mt, -time.Minute, time.Hour)
			g := a.goodsPriced(mt, sl.ID, 1990, 3)
			uc := a.grabCoupon(shopper, deal.ID)
			a.myCoupon(shopper, uc.ID)
			o := a.grab(shopper, g.ID)
			if st, _ := a.pay(shopper, o.ID, uc.ID); st != 200 {
				t.Fatalf("%s: pay the rehearsal order with the coupon: %d", what, st)
			}
			if c := a.myCoupon(shopper, uc.ID); c.Status != "used" {
				t.Fatalf("%s: the coupon after paying: %+v", what, c)
			}
			var note string
			browse(t, ctx, what+": the rehearsal's page", chromedp.Navigate(fmt.Sprintf("%s/admin/slots/%d", a.URL, sl.ID)),
				chromedp.WaitVisible(`[data-testid=rehearsal-delete-form]`),
				chromedp.Text(`[data-testid=rehearsal-delete-form]`, &note, chromedp.ByQuery))
			if !strings.Contains(note, words[lang].who) {
				t.Errorf("%s: the delete form reads %q; want it to say who may delete (%q)", what, note, words[lang].who)
			}
			browse(t, ctx, what+": delete without ticking",
				chromedp.Evaluate(`document.querySelector("[data-testid=rehearsal-delete-confirm]").required = false`, nil),
				chromedp.Click(`[data-testid=rehearsal-delete]`),
				chromedp.WaitVisible(`[data-testid=rehearsal-delete-form] [data-testid=flash-rehearsal]`),
			)
			if st := a.call("GET", fmt.Sprintf("/api/slots/%d/goods", sl.ID), mt, nil, nil); st != 200 {
				t.Fatalf("%s: unticked, the rehearsal is gone (%d)", what, st)
			}
			var flash string
			browse(t, ctx, what+": delete it",
				chromedp.Click(`[data-testid=rehearsal-delete-confirm]`),
				chromedp.Click(`[data-testid=rehearsal-delete]`),
				chromedp.WaitVisible(`[data-testid=slot-form]`),
				chromedp.Text(`[data-testid=flash]`, &flash, chromedp.ByQuery),
			)
			if !strings.Contains(flash, words[lang].done) {
				t.Errorf("%s: after the delete the page says %q", what, flash)
			}
			a.wantError("GET", fmt.Sprintf("/api/goods/%d", g.ID), "", nil, 404, "not_found")
			if c := a.myCoupon(shopper, uc.ID); c.Status != "unused" || c.OrderID != 0 {
				t.Errorf("%s: the coupon spent on the deleted rehearsal is %+v; want unused again", what, c)
			}
		}
	}
}

// The admin's new-slot form marks a rehearsal too, and the admin deletes it
// from its page, at 1366 and at 390 px (the words are the merchant's test's).
func TestRehearsalAdminFormBrowser(t *testing.T) {
	a := startApp(t)
	ctx := newBrowser(t)
	browse(t, ctx, "log in as the admin", browserLogin(ctx, a.URL, a.Config.AdminUsername, testAdminPassword))
	for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
		what := fmt.Sprintf("the admin at %d px", size.w)
		var path string
		browse(t, ctx, what+": a rehearsal from the form", chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(a.URL+"/admin/slots"),
			chromedp.WaitVisible(`[data-testid=slot-form]`),
			chromedp.SendKeys(`[data-testid=slot-form] [data-testid=input-title]`, fmt.Sprintf("Admin dry run %d", size.w)),
			chromedp.Click(`[data-testid=slot-rehearsal]`),
			chromedp.Click(`[data-testid=slot-submit]`),
			chromedp.WaitVisible(`[data-testid=admin-slot] [data-testid=rehearsal-badge]`),
			chromedp.WaitVisible(`[data-testid=rehearsal-delete-form]`),
			chromedp.Evaluate(`location.pathname`, &path),
		)
		var id int64
		if _, err := fmt.Sscanf(path, "/admin/slots/%d", &id); err != nil {
			t.Fatalf("%s: the form led to %q, not the new slot's page", what, path)
		}
		browse(t, ctx, what+": delete it",
			chromedp.Click(`[data-testid=rehearsal-delete-confirm]`),
			chromedp.Click(`[data-testid=rehearsal-delete]`),
			chromedp.WaitVisible(`[data-testid=slot-form]`),
		)
		a.wantError("GET", fmt.Sprintf("/api/slots/%d/goods", id), "", nil, 404, "not_found")
	}
}
