package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/stripe/stripetest"
)

// Reconciliation reports each kind of disagreement between what Stripe
// holds (its lists, as the test sets them) and the store, one line each
// naming the order, and `seckill payments reconcile` exits non-zero on
// them; with Stripe and the store agreeing it finds none and exits 0.
func TestStripeReconcileEveryKind(t *testing.T) {
	a, listing, base := startPayAppListing(t)
	_, g := a.liveGoods(20, 20)
	tok, _ := a.newUser()
	now := a.Clock.Now()
	cli := func() (string, error) {
		var out bytes.Buffer
		err := runPayments(context.Background(), []string{"reconcile", "-since", "720h", "-db-path", a.Config.DBPath, "-database-url", a.Config.DatabaseURL,
			"-redis-url", a.Config.RedisURL, "-stripe-secret-key", stripetest.SecretKey, "-stripe-webhook-secret", stripetest.WebhookSecret,
			"-stripe-api-base", base}, &out)
		return out.String(), err
	}
	open := func(method string) (orderJSON, checkoutJSON) {
		o := a.grab(tok, g.ID)
		return o, a.checkout(tok, o.ID, method)
	}
	webhook := func(o orderJSON, co checkoutJSON, amount int64) {
		t.Helper()
		o.AmountCents = amount
		body, sig := a.paidEvent("evt_"+co.ProviderRef, o, co)
		if st := a.webhook(body, sig); st != 200 {
			t.Fatalf("webhook of order %d: %d", o.ID, st)
		}
	}
	// Stripe's word that a refund it was asked for failed.
	refundFailed := func(orderID int64) {
		t.Helper()
		if _, err := a.Backend.SQL.W.Exec(`UPDATE provider_refunds SET status = 'failed' WHERE order_id = ?`, orderID); err != nil {
			t.Fatal(err)
		}
	}
	session := func(o orderJSON, co checkoutJSON, amount, refunded int64) stripetest.Session {
		return stripetest.Session{ID: co.ProviderRef, OrderID: o.ID, AmountCents: amount, Currency: "cny", PaymentStatus: "paid",
			PaymentIntent: "pi_" + co.ProviderRef, Created: now, RefundedCents: refunded}
	}

	listing.Set(nil, nil)
	if out, err := cli(); err != nil || !strings.Contains(out, "0 mismatches") {
		t.Fatalf("nothing paid anywhere: %v\n%s", err, out)
	}

	clean, cleanCo := open("card") // paid at both, the same
	webhook(clean, cleanCo, clean.AmountCents)
	notApplied, notAppliedCo := open("card") // paid at Stripe, its webhook never came
	wechat, wechatCo := open("wechat_pay")   // the same by WeChat Pay
	kept, keptCo := open("card")             // the wrong amount, refused, and the refund failed
	webhook(kept, keptCo, kept.AmountCents-1)
	refundFailed(kept.ID)
	disputed, disputedCo := open("card") // refunded at Stripe only
	webhook(disputed, disputedCo, disputed.AmountCents)
	unrefunded, unrefundedCo := open("card") // refunded in the store only
	webhook(unrefunded, unrefundedCo, unrefunded.AmountCents)
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/refund", unrefunded.ID), tok, nil, nil); st != 200 {
		t.Fatalf("refund: %d", st)
	}
	refundFailed(unrefunded.ID)
	changed, changedCo := open("card") // Stripe took another amount than the store settled
	webhook(changed, changedCo, changed.AmountCents)
	stranger := a.grab(tok, g.ID)      // money at Stripe for a trade the store never opened
	missing, missingCo := open("card") // paid in the store, not at Stripe
	webhook(missing, missingCo, missing.AmountCents)

	listing.Set([]stripetest.Session{
		session(clean, cleanCo, clean.AmountCents, 0),
		session(notApplied, notAppliedCo, notApplied.AmountCents, 0),
		session(kept, keptCo, kept.AmountCents-1, 0),
		session(disputed, disputedCo, disputed.AmountCents, disputed.AmountCents),
		session(unrefunded, unrefundedCo, unrefunded.AmountCents, 0),
		session(changed, changedCo, changed.AmountCents+100, 0),
		session(stranger, checkoutJSON{ProviderRef: "cs_test_stranger"}, stranger.AmountCents, 0),
	}, []stripetest.Intent{
		{ID: wechatCo.ProviderRef, OrderID: wechat.ID, AmountCents: wechat.AmountCents, Currency: "cny", Status: "succeeded", Created: now},
	})
	want := map[int64]string{
		notApplied.ID: "paid_not_applied", wechat.ID: "paid_not_applied", kept.ID: "money_without_order",
		disputed.ID: "refunded_order_paid", unrefunded.ID: "refund_not_made", changed.ID: "amount",
		stranger.ID: "unknown_trade", missing.ID: "not_at_provider",
	}
	ms, err := a.payments().Reconcile(context.Background(), now.Add(-24*3600e9))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for _, m := range ms {
		if _, twice := got[m.OrderID]; twice {
			t.Errorf("order %d reported twice", m.OrderID)
		}
		got[m.OrderID] = m.Kind
	}
	var diffs []string
	for id, kind := range want {
		if got[id] != kind {
			diffs = append(diffs, fmt.Sprintf("order %d: %q, want %q", id, got[id], kind))
		}
	}
	for id, kind := range got {
		if _, ok := want[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("order %d: %q, want none", id, kind))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("mismatches:\n%s\ngot %+v", strings.Join(diffs, "\n"), ms)
	}

	out, err := cli()
	if !errors.Is(err, errMismatches) || !strings.Contains(err.Error(), "8 mismatches") {
		t.Fatalf("the command answered %v, want it to fail with 8 mismatches (exit 1)\n%s", err, out)
	}
	for id, kind := range want {
		if !strings.Contains(out, fmt.Sprintf("%s\torder %d\t", kind, id)) {
			t.Errorf("the command's output has no %s line for order %d:\n%s", kind, id, out)
		}
	}
}
