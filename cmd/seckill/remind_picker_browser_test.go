package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pickerProblems measures the open reminder pickers as a person meets them:
// every enabled control (a toggle's whole label) at least 32 px tall, no
// label or button text cut, no lead time offered that is too late or
// disabled, and no "Your reminders" heading over an empty list.
const pickerProblems = `(() => {
	const out = [];
	const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
	const name = (el) => (el.dataset.testid || el.tagName.toLowerCase()) + " “" + (el.textContent || "").trim().slice(0, 30) + "”";
	document.querySelectorAll("details[data-picker]").forEach((p) => {
		p.querySelectorAll("summary, select, button, input, textarea").forEach((c) => {
			if (!shown(c) || c.disabled) return;
			const target = c.tagName === "INPUT" && c.closest("label") ? c.closest("label") : c;
			const h = target.getBoundingClientRect().height;
			if (h < 32) out.push(name(target) + " is " + Math.round(h) + " px tall");
		});
		p.querySelectorAll("label, summary, button, legend, th, td").forEach((l) => {
			if (!shown(l)) return;
			if (l.scrollWidth > l.clientWidth + 1) out.push(name(l) + " is cut: " + l.scrollWidth + " > " + l.clientWidth);
			const r = l.getBoundingClientRect();
			if (r.right > document.documentElement.clientWidth + 1) out.push(name(l) + " runs off the page");
		});
		p.querySelectorAll("option").forEach((o) => {
			if (o.disabled || /too late/i.test(o.textContent)) out.push("lead time offered: " + o.textContent.trim());
		});
		p.querySelectorAll("input:disabled, .too-late").forEach((c) => out.push("disabled choice: " + name(c)));
	});
	document.querySelectorAll(".booked").forEach((b) => {
		const items = b.querySelectorAll("li").length;
		const h = b.querySelector("h3");
		if (h && shown(h) && items === 0) out.push("an empty “" + h.textContent.trim() + "” heading");
	});
	return out;
})()`

// At a desktop's width and a phone's, the coupon centre's reminder picker
// is a few labelled controls a finger can hit: a list of the lead times
// still possible, a toggle per channel offered, one Remind me; it books a
// reminder, listed under it with its Cancel.
func TestRemindPickerBrowser(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	merchant, _ := a.newMerchant()
	now := a.Clock.Now()
	// Opens in 35½ minutes: 5 to 35 minutes before may be booked, 40 to 60 are too late.
	c := a.couponCreate(merchant, "Picker coupon", 10, 1, now.Add(35*time.Minute+30*time.Second), now.Add(2*time.Hour))
	name, _ := a.register("picker")
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))

	for _, size := range []struct {
		w, h    int64
		minutes int
	}{{1366, 900, 10}, {390, 844, 30}} {
		at := fmt.Sprintf("at %d px", size.w)
		browse(t, ctx, "open the picker "+at,
			chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(a.URL+"/coupons"),
			chromedp.WaitVisible(tid("coupon", c.ID)),
			// Open it (it opens by itself once it holds a reminder).
			chromedp.Evaluate(fmt.Sprintf(`(() => { const d = document.querySelector('%s'); if (!d.open) d.querySelector("summary").click(); })()`, tid("picker", c.ID)), nil),
			chromedp.WaitVisible(tid("picker", c.ID)+" select, "+tid("picker", c.ID)+" input"),
		)
		var problems []string
		browse(t, ctx, "measure the picker "+at, chromedp.Evaluate(pickerProblems, &problems))
		if len(problems) > 0 {
			t.Fatalf("%s the picker has problems:\n  %s", at, strings.Join(problems, "\n  "))
		}
		var leads []string
		browse(t, ctx, "read the lead times "+at, chromedp.Evaluate(
			fmt.Sprintf(`Array.from(document.querySelectorAll('%s option')).map((o) => o.value)`, tid("remind-lead", c.ID)), &leads))
		if got, want := strings.Join(leads, ","), "5,10,15,20,25,30,35"; got != want {
			t.Fatalf("%s the picker offers lead times %s, want %s", at, got, want)
		}
		browse(t, ctx, "remind me "+at,
			chromedp.SetValue(tid("remind-lead", c.ID), fmt.Sprint(size.minutes)),
			chromedp.Click(tid("remind-book", c.ID)),
			chromedp.WaitVisible(tid("reminder", c.ID, size.minutes, "app")),
		)
		// Listed, with its Cancel: the list measures as the picker does.
		browse(t, ctx, "measure with a reminder "+at, chromedp.Evaluate(pickerProblems, &problems))
		if len(problems) > 0 {
			t.Fatalf("%s after booking, the picker has problems:\n  %s", at, strings.Join(problems, "\n  "))
		}
		var h float64
		browse(t, ctx, "measure Cancel "+at, chromedp.Evaluate(
			fmt.Sprintf(`document.querySelector('%s').getBoundingClientRect().height`, tid("reminder-cancel", c.ID, size.minutes, "app")), &h))
		if h < 32 {
			t.Fatalf("%s the reminder's Cancel is %.0f px tall", at, h)
		}
	}
	token := a.login(name, "password123")
	var out struct{ Reminders []reminderJSON }
	if st := a.call("GET", fmt.Sprintf("/api/coupons/%d/reminders", c.ID), token, nil, &out); st != 200 || len(out.Reminders) != 2 {
		t.Fatalf("booked through the picker: %d, %+v; want the 10 and 30 minute reminders", st, out.Reminders)
	}
}
