package goods_test

import (
	"bytes"
	"image"
	"image/color"
	"image/gif"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// Ending goods closes its window in the store and in Redis; the slot's other
// goods sell on; the stock sync then retires it once settled.
func TestEndGoodsEarly(t *testing.T) {
	e := newGoodsEnv(t)
	sl := e.slot(-time.Minute, time.Hour)
	g1, g2 := e.goods(sl, 5, 1), e.goods(sl, 5, 1)
	e.grab(1, g1.ID)
	g, err := e.s.EndGoods(e.ctx, e.merchant, g1.ID)
	if err != nil || g.State != model.SlotEnded || !g.EndedEarly {
		t.Fatalf("end: %+v %v", g, err)
	}
	_, err = e.s.Grab(e.ctx, 2, g1.ID)
	wantCode(t, "grab after the end", err, db.EENDED)
	e.grab(2, g2.ID)
	_, err = e.s.EndGoods(e.ctx, e.merchant, g1.ID)
	wantCode(t, "end twice", err, db.ECONFLICT)
	_, err = e.s.EndGoods(e.ctx, model.Claims{UserID: e.merchant.UserID + 99, Role: model.RoleMerchant}, g2.ID)
	wantCode(t, "another merchant", err, db.ENOTFOUND)
	e.checkBalance(g1.ID, "after the end")
}

// An upcoming slot ended now reads ended, and stays so when its planned start passes.
func TestEndUpcomingSlot(t *testing.T) {
	e := newGoodsEnv(t)
	sl := e.slot(5*time.Minute, time.Hour) // inside the preheat window: loaded at once
	g := e.goods(sl, 3, 1)
	ended, err := e.s.EndSlot(e.ctx, e.merchant, sl.ID)
	if err != nil || ended.State != model.SlotEnded || !ended.EndedEarly {
		t.Fatalf("end: %+v %v", ended, err)
	}
	e.clk.Advance(10 * time.Minute)
	_, err = e.s.Grab(e.ctx, 1, g.ID)
	wantCode(t, "grab after the planned start", err, db.EENDED)
	if got, _ := e.s.Get(e.ctx, g.ID); got.State != model.SlotEnded {
		t.Fatalf("goods state %q", got.State)
	}
}

// Hidden goods is refused to shoppers and to grabs, seen by its owner, and
// sells again once shown; hiding never touches its stock.
func TestHideGoods(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.liveGoods(4, 1)
	e.grab(1, g.ID)
	if _, err := e.s.SetGoodsHidden(e.ctx, e.merchant, g.ID, true); err != nil {
		t.Fatal(err)
	}
	shopper := model.Claims{UserID: 7, Role: model.RoleUser}
	_, err := e.s.ShopperGoods(e.ctx, shopper, g.ID)
	wantCode(t, "shopper reads hidden goods", err, db.ENOTFOUND)
	if _, err := e.s.Grab(e.ctx, 2, g.ID); err == nil {
		t.Fatal("grab of hidden goods taken")
	}
	if own, err := e.s.ShopperGoods(e.ctx, e.merchant, g.ID); err != nil || !own.Hidden {
		t.Fatalf("owner: %+v %v", own, err)
	}
	if gs, _ := e.s.ShopperSlotGoods(e.ctx, shopper, g.SlotID); len(gs) != 0 {
		t.Fatalf("hidden goods listed: %+v", gs)
	}
	if got := e.remaining(g.ID); got != 3 {
		t.Fatalf("remaining %d after hiding, want 3", got)
	}
	if _, err := e.s.SetGoodsHidden(e.ctx, e.merchant, g.ID, false); err != nil {
		t.Fatal(err)
	}
	e.grab(2, g.ID)
	e.checkBalance(g.ID, "after showing again")
}

// The sampler takes one sample a second of every active goods and keeps them.
func TestSampleActive(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.liveGoods(5, 2)
	if err := e.s.SampleActive(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.grab(1, g.ID)
	e.grab(1, g.ID)
	if err := e.s.SampleActive(e.ctx); err != nil { // the same second: nothing new
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	if err := e.s.SampleActive(e.ctx); err != nil {
		t.Fatal(err)
	}
	smp, err := e.s.Samples(e.ctx, e.merchant, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(smp) != 2 || smp[0].Remaining != 5 || smp[0].Grabs != 0 || smp[1].Remaining != 3 || smp[1].Unpaid != 2 || smp[1].Grabs != 2 {
		t.Fatalf("samples %+v", smp)
	}
	_, err = e.s.Samples(e.ctx, model.Claims{UserID: e.merchant.UserID + 99, Role: model.RoleMerchant}, g.ID)
	wantCode(t, "another merchant's samples", err, db.ENOTFOUND)
}

// Pictures are taken by their bytes' type, stored once by hash.
func TestSetImage(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.liveGoods(1, 1)
	_, err := e.s.SetImage(e.ctx, e.merchant, g.ID, []byte("<html>not a picture</html>"))
	wantCode(t, "html", err, db.EINVALID)
	_, err = e.s.SetImage(e.ctx, e.merchant, g.ID, make([]byte, goods.MaxImageBytes+1))
	wantCode(t, "too large", err, db.ETOOLARGE)
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, 2, 2), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.SetImage(e.ctx, e.merchant, g.ID, b.Bytes())
	if err != nil || got.ImageURL == "" {
		t.Fatalf("gif: %+v %v", got, err)
	}
	img, err := e.s.Image(e.ctx, got.ImageURL[len(goods.ImagePath):])
	if err != nil || img.ContentType != "image/gif" || !bytes.Equal(img.Data, b.Bytes()) {
		t.Fatalf("stored: %+v %v", img, err)
	}
}

// BenchmarkSampleActive measures one sampler tick over 100 active goods (one
// pipelined round trip of 100 scripts); each iteration is a new second.
func BenchmarkSampleActive(b *testing.B) {
	e := newGoodsEnv(b)
	sl := e.slot(-time.Minute, time.Hour)
	for range 100 {
		e.goods(sl, 1000, 1)
	}
	b.ResetTimer()
	for range b.N {
		e.clk.Advance(time.Second)
		if err := e.s.SampleActive(e.ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// Goods ended before its slot opens reads ended, before and after the slot's start.
func TestEndUpcomingGoods(t *testing.T) {
	e := newGoodsEnv(t)
	sl := e.slot(5*time.Minute, time.Hour)
	g, other := e.goods(sl, 3, 1), e.goods(sl, 3, 1)
	ended, err := e.s.EndGoods(e.ctx, e.merchant, g.ID)
	if err != nil || ended.State != model.SlotEnded {
		t.Fatalf("end: %+v %v", ended, err)
	}
	e.clk.Advance(10 * time.Minute)
	if got, _ := e.s.Get(e.ctx, g.ID); got.State != model.SlotEnded {
		t.Fatalf("after the slot's start: %q", got.State)
	}
	_, err = e.s.Grab(e.ctx, 1, g.ID)
	wantCode(t, "grab", err, db.EENDED)
	e.grab(1, other.ID) // the slot's other goods is on sale
}
