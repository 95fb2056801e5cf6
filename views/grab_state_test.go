package views

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/model"
)

func TestGrabState(t *testing.T) {
	g := func(state string, remaining, limit int64) model.Goods {
		return model.Goods{State: state, Remaining: remaining, Stock: 5, LimitPerUser: limit, SeckillPriceCents: 2500}
	}
	for _, tc := range []struct {
		name  string
		goods model.Goods
		held  int64
		want  string
		label string
	}{
		{"upcoming", g(model.SlotUpcoming, 5, 1), 0, GrabUpcoming, "Grab for ¥25.00"},
		{"live", g(model.SlotLive, 5, 2), 1, GrabLive, "Grab for ¥25.00"},
		{"limit reached", g(model.SlotLive, 5, 2), 2, GrabLimitReached, "Limit reached"},
		{"sold out before the limit", g(model.SlotLive, 0, 1), 1, GrabSoldOut, "Sold out"},
		{"sold out", g(model.SlotLive, 0, 1), 0, GrabSoldOut, "Sold out"},
		{"ended beats sold out", g(model.SlotEnded, 0, 1), 0, GrabEnded, "Sale ended"},
		{"no limit", g(model.SlotLive, 5, 0), 9, GrabLive, "Grab for ¥25.00"},
	} {
		if got := GrabState(tc.goods, tc.held); got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.name, got, tc.want)
		}
		if got := grabLabel(GrabState(tc.goods, tc.held), tc.goods); got != tc.label {
			t.Errorf("%s: label %q, want %q", tc.name, got, tc.label)
		}
	}
}

func TestHeldByGoods(t *testing.T) {
	held := HeldByGoods([]model.Order{
		{GoodsID: 1, Status: model.OrderUnpaid}, {GoodsID: 1, Status: model.OrderPaid},
		{GoodsID: 1, Status: model.OrderExpired}, {GoodsID: 1, Status: model.OrderCancelled}, {GoodsID: 1, Status: model.OrderFailed},
		{GoodsID: 2, Status: model.OrderPaid},
	})
	if held[1] != 2 || held[2] != 1 || len(held) != 2 {
		t.Fatalf("held = %v, want 1:2 2:1", held)
	}
}

func TestShopperWording(t *testing.T) {
	for in, want := range map[string]string{"live": "Live", "sold_out": "Sold out", "active": "Active", "": ""} {
		if got := stateLabel(in); got != want {
			t.Errorf("stateLabel(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{12*model.OrderSeqSpan + 7: "#G12-0007", 2*model.OrderSeqSpan + 12345: "#G2-12345"} {
		if got := orderNo(in); got != want {
			t.Errorf("orderNo(%d) = %q, want %q", in, got, want)
		}
	}
	if got := sentence("no such page"); got != "No such page." {
		t.Errorf("sentence = %q", got)
	}
	at := time.Date(2026, 12, 1, 6, 5, 9, 0, time.FixedZone("CST", 8*3600))
	if got := timeFallback(at); got != "30 Nov 2026, 22:05 UTC" {
		t.Errorf("timeFallback = %q", got)
	}
}

// The server renders the state a reload must show, before any script runs.
func TestGoodsPageRendersGrabState(t *testing.T) {
	user := &PageUser{ID: 7, Username: "ann", Role: "user"}
	live := model.Goods{ID: 3, State: model.SlotLive, Remaining: 4, Stock: 5, LimitPerUser: 1, SeckillPriceCents: 2500,
		StartAt: time.Now().Add(-time.Minute), EndAt: time.Now().Add(time.Hour)}
	soldOut := live
	soldOut.Remaining = 0
	ended := live
	ended.State = model.SlotEnded
	for _, tc := range []struct {
		name   string
		v      GoodsView
		button string
	}{
		{"live", GoodsView{Goods: live}, `data-testid="grab-button" data-pow="0">Grab for ¥25.00</button>`},
		{"sold out", GoodsView{Goods: soldOut}, `data-testid="grab-button" data-pow="0" disabled>Sold out</button>`},
		{"limit reached", GoodsView{Goods: live, Orders: []model.Order{{ID: 3_000_000_001, GoodsID: 3, Status: model.OrderPaid}}},
			`data-testid="grab-button" data-pow="0" disabled>Limit reached</button>`},
		{"ended", GoodsView{Goods: ended}, `data-testid="grab-button" data-pow="0" disabled>Sale ended</button>`},
	} {
		var b strings.Builder
		if err := GoodsPage(Page{Title: "x", User: user}, tc.v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.button) {
			i := strings.Index(b.String(), `data-testid="grab-button"`)
			t.Errorf("%s: the page renders %q, want %q", tc.name, b.String()[max(0, i-20):min(len(b.String()), i+80)], tc.button)
		}
	}
}
