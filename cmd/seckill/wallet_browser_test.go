package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// My wallet lists the shopper's red packet winnings ("You got ¥1.00") with
// their total, whether a claim has reached the store yet or not, and the
// coupons they claimed; the red packet list marks the packets they opened
// with the amount, and no other.
func TestWalletBrowser(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	flushed := a.createRedPacket(mt, map[string]any{"title": "Flushed packet", "total_cents": 500, "count": 5, "mode": "fixed"})
	fresh := a.createRedPacket(mt, map[string]any{"title": "Fresh packet", "total_cents": 600, "count": 3, "mode": "fixed"})
	other := a.createRedPacket(mt, map[string]any{"title": "Other packet", "total_cents": 900, "count": 3, "mode": "fixed"})
	cp := a.couponTemplate(mt, "amount_off", 500, 0, 7)

	name, token := a.register("wallet")
	a.grabRedPacket(token, flushed.ID)
	eventually(t, 30*time.Second, "the first claim in the store", func() bool { return a.redPacketStats(mt, flushed.ID).Flushed == 1 })
	a.grabRedPacket(token, fresh.ID)
	uc := a.grabCoupon(token, cp.ID)
	someone, _ := a.newUser()
	a.grabRedPacket(someone, other.ID) // someone else's winning is not the shopper's

	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "open the wallet from the menu",
		chromedp.Click(`[data-testid=nav-wallet]`, chromedp.NodeReady),
		chromedp.WaitVisible(`[data-testid=wallet]`),
	)
	waitText(t, ctx, fmt.Sprintf(`[data-testid=wallet-rp-amount-%d]`, flushed.ID), "¥1.00")
	waitText(t, ctx, fmt.Sprintf(`[data-testid=wallet-rp-amount-%d]`, fresh.ID), "¥2.00")
	waitText(t, ctx, `[data-testid=wallet-total]`, "¥3.00")
	var n int
	browse(t, ctx, "count the winnings", chromedp.Evaluate(`document.querySelectorAll("[data-testid^=wallet-rp-amount-]").length`, &n))
	if n != 2 {
		t.Fatalf("wallet lists %d winnings, want 2", n)
	}
	until(t, ctx, "the coupon in the wallet", fmt.Sprintf(`!!document.querySelector("[data-testid=wallet-coupon-%d]")`, uc.ID))

	browse(t, ctx, "open the red packet list", chromedp.Navigate(a.URL+"/redpackets"), chromedp.WaitVisible(`[data-testid=redpackets]`))
	opened := func(id int64) string {
		return fmt.Sprintf(`document.querySelector("[data-testid=rp-card][data-rp-watch='%d'] [data-testid=rp-opened]")?.innerText ?? ""`, id)
	}
	for _, c := range []struct {
		id   int64
		want string
	}{{flushed.ID, "Opened · you got ¥1.00"}, {fresh.ID, "Opened · you got ¥2.00"}, {other.ID, ""}} {
		var got string
		browse(t, ctx, "read the mark", chromedp.Evaluate(opened(c.id), &got))
		if got != c.want {
			t.Fatalf("packet %d marked %q, want %q", c.id, got, c.want)
		}
	}
}
