package switches_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/switches"
)

func ptr[T any](v T) *T { return &v }

// The defaults are the live events' usual push interval, nothing paused.
func TestSwitchesDefaults(t *testing.T) {
	if got := time.Duration(model.DefaultStockPushMS) * time.Millisecond; got != live.CoalesceWindow {
		t.Fatalf("default stock_push_ms %v, the live push interval is %v", got, live.CoalesceWindow)
	}
	clk := dbtest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := switches.New(&backend.Backend{SQL: dbtest.DB(t), Now: clk.Now})
	got, err := s.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != model.DefaultSwitches() || s.Current() != model.DefaultSwitches() {
		t.Fatalf("fresh switches %+v, want the defaults %+v", got, model.DefaultSwitches())
	}
}

// A change sets what it names and leaves the rest; another service on the
// same store (another process) sees it at its next Load, and its OnChange
// hooks are told; an invalid change changes nothing.
func TestSwitchesSetAndShare(t *testing.T) {
	ctx := context.Background()
	clk := dbtest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	store := dbtest.DB(t)
	a := switches.New(&backend.Backend{SQL: store, Now: clk.Now})
	b := switches.New(&backend.Backend{SQL: store, Now: clk.Now})
	var seen []model.Switches
	b.OnChange(func(sw model.Switches) { seen = append(seen, sw) })

	got, changed, err := a.Set(ctx, model.SwitchesChange{SalePaused: ptr(true), StockPushMS: ptr(250)})
	if err != nil {
		t.Fatal(err)
	}
	want := model.DefaultSwitches()
	want.SalePaused, want.StockPushMS = true, 250
	if got != want || a.Current() != want {
		t.Fatalf("after the change %+v (memory %+v), want %+v", got, a.Current(), want)
	}
	if len(changed) != 2 || changed["sale_paused"] != (model.SwitchChange{From: false, To: true}) || changed["stock_push_ms"] != (model.SwitchChange{From: 100, To: 250}) {
		t.Fatalf("changed %v", changed)
	}
	if err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Current() != want || len(seen) != 2 || seen[1] != want {
		t.Fatalf("the other process holds %+v (told %+v), want %+v", b.Current(), seen, want)
	}

	for _, bad := range []model.SwitchesChange{
		{StockPushMS: ptr(5), SalePaused: ptr(false)},
		{StockPushMS: ptr(60_000)},
		{PowFloorBits: ptr(-1)},
		{PowFloorBits: ptr(25), MerchantReadOnly: ptr(true)},
	} {
		if _, _, err := a.Set(ctx, bad); db.ErrorCode(err) != db.EINVALID {
			t.Fatalf("Set(%+v) = %v, want invalid", bad, err)
		}
	}
	if got, _ := a.Get(ctx); got != want {
		t.Fatalf("after refused changes %+v, want %+v", got, want)
	}

	// Nothing left out changes the rest.
	got, changed, err = a.Set(ctx, model.SwitchesChange{SalePaused: ptr(false), PowFloorBits: ptr(12)})
	if err != nil {
		t.Fatal(err)
	}
	want.SalePaused, want.PowFloorBits = false, 12
	if got != want || len(changed) != 2 {
		t.Fatalf("after the second change %+v (%v), want %+v", got, changed, want)
	}
}
