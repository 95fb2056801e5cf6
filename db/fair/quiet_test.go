package fair_test

import (
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
)

// Goods whose settings ask nothing of a grab are passed by the fair stage
// (the engine does not call Check) until the settings change: a proof of
// work the merchant asks mid-sale is asked of the next grab, and so is the
// floor once its change is told; another process, which hears of the
// merchant's change only through the store, asks it within fairRefresh.
func TestFairStageQuietUntilSettingsChange(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.LiveGoods(100, 1)
	floor := 0
	e.F.Floor = func() int { return floor }
	grab := func(user int64, what string, code string) {
		t.Helper()
		_, err := e.GrabWith(user, g.ID, goods.Pass{})
		if code == "" && err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if code != "" {
			wantCode(t, what, err, code)
		}
	}
	grab(1, "the first grab, checked", "")
	floor = 8
	grab(2, "the floor raised, not told: the goods were marked as asking nothing", "")
	e.F.Quiet().Changed()
	grab(3, "the floor raised and told", db.EPOWREQUIRED)
	floor = 0
	e.F.Quiet().Changed()
	grab(4, "the floor back to none", "")

	// Another process, its own settings read (a process of its own over
	// the same Redis and store), marks the goods too.
	other, clk := e.TwinFair()
	other.Floor = func() int { return 0 }
	otherGrab := func(user int64) error {
		o := other.Goods.Decide(e.Ctx, []goods.Grab{{User: user, Goods: g.ID}})[0]
		return o.Err
	}
	if err := otherGrab(5); err != nil {
		t.Fatalf("the other process's grab: %v", err)
	}

	in := goods.Input{SlotID: g.SlotID, Title: g.Title, PriceCents: g.PriceCents, SeckillPriceCents: g.SeckillPriceCents,
		Stock: g.Stock, LimitPerUser: g.LimitPerUser, PowBits: new(8)}
	if _, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in); err != nil {
		t.Fatal(err)
	}
	grab(6, "the merchant asks a proof mid-sale", db.EPOWREQUIRED)
	clk.Advance(fair.FairRefresh)
	wantCode(t, "the other process, its settings' trust run out", otherGrab(7), db.EPOWREQUIRED)
}
