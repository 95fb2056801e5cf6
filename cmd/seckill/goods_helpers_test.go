package main

import (
	"fmt"
	"time"
)

type slotJSON struct {
	ID         int64     `json:"id"`
	MerchantID int64     `json:"merchant_id"`
	Title      string    `json:"title"`
	StartAt    time.Time `json:"start_at"`
	EndAt      time.Time `json:"end_at"`
	State      string    `json:"state"`
}

type goodsJSON struct {
	ID                int64  `json:"id"`
	SlotID            int64  `json:"slot_id"`
	Title             string `json:"title"`
	Description       string `json:"description"`
	PriceCents        int64  `json:"price_cents"`
	SeckillPriceCents int64  `json:"seckill_price_cents"`
	Stock             int64  `json:"stock"`
	LimitPerUser      int64  `json:"limit_per_user"`
	Shards            int    `json:"shards"`
	Remaining         int64  `json:"remaining"`
}

type orderJSON struct {
	ID          int64     `json:"id"`
	GoodsID     int64     `json:"goods_id"`
	UserID      int64     `json:"user_id"`
	AmountCents int64     `json:"amount_cents"`
	Status      string    `json:"status"`
	Failure     string    `json:"failure"`
	ExpiresAt   time.Time `json:"expires_at"`
}

type statsJSON struct {
	Stock     int64 `json:"stock"`
	Remaining int64 `json:"remaining"`
	Unpaid    int64 `json:"unpaid"`
	Paid      int64 `json:"paid"`
	Expired   int64 `json:"expired"`
	Cancelled int64 `json:"cancelled"`
	Failed    int64 `json:"failed"`
	DB        struct {
		Unpaid    int64 `json:"unpaid"`
		Paid      int64 `json:"paid"`
		Expired   int64 `json:"expired"`
		Cancelled int64 `json:"cancelled"`
		Failed    int64 `json:"failed"`
		Stock     int64 `json:"stock"`
		Conflicts int64 `json:"conflicts"`
	} `json:"db"`
	Drift []string `json:"drift"`
}

// createSlot has the merchant create a slot starting at start (from now) and lasting length.
func (a *testApp) createSlot(token string, start, length time.Duration) slotJSON {
	a.T.Helper()
	now := a.Clock.Now().UTC()
	var out struct{ Slot slotJSON }
	body := map[string]string{"title": "Slot " + fmt.Sprint(userSeq.Add(1)),
		"start_at": now.Add(start).Format(time.RFC3339Nano), "end_at": now.Add(start + length).Format(time.RFC3339Nano)}
	if st := a.call("POST", "/api/admin/slots", token, body, &out); st != 201 {
		a.T.Fatalf("create slot: %d", st)
	}
	return out.Slot
}

// createGoods has the merchant put goods in the slot.
func (a *testApp) createGoods(token string, slotID, stock, limit int64) goodsJSON {
	a.T.Helper()
	var out struct{ Goods goodsJSON }
	body := map[string]any{"slot_id": slotID, "title": "Goods " + fmt.Sprint(userSeq.Add(1)), "description": "nice",
		"price_cents": 10000, "seckill_price_cents": 2500, "stock": stock, "limit_per_user": limit}
	if st := a.call("POST", "/api/admin/goods", token, body, &out); st != 201 {
		a.T.Fatalf("create goods: %d", st)
	}
	return out.Goods
}

// liveGoods creates a merchant, a live slot and goods in it.
func (a *testApp) liveGoods(stock, limit int64) (merchantToken string, g goodsJSON) {
	a.T.Helper()
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	return mt, a.createGoods(mt, sl.ID, stock, limit)
}

func (a *testApp) grab(token string, goodsID int64) orderJSON {
	a.T.Helper()
	var out struct{ Order orderJSON }
	if st := a.call("POST", fmt.Sprintf("/api/goods/%d/grab", goodsID), token, nil, &out); st != 201 {
		a.T.Fatalf("grab goods %d: %d", goodsID, st)
	}
	return out.Order
}

func (a *testApp) order(token string, id int64) orderJSON {
	a.T.Helper()
	var out struct{ Order orderJSON }
	if st := a.call("GET", fmt.Sprintf("/api/orders/%d", id), token, nil, &out); st != 200 {
		a.T.Fatalf("get order %d: %d", id, st)
	}
	return out.Order
}

func (a *testApp) goods(id int64) goodsJSON {
	a.T.Helper()
	var out struct{ Goods goodsJSON }
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d", id), "", nil, &out); st != 200 {
		a.T.Fatalf("get goods %d: %d", id, st)
	}
	return out.Goods
}

func (a *testApp) stats(token string, id int64) statsJSON {
	a.T.Helper()
	var out statsJSON
	if st := a.call("GET", fmt.Sprintf("/api/admin/goods/%d/stats", id), token, nil, &out); st != 200 {
		a.T.Fatalf("stats of goods %d: %d", id, st)
	}
	return out
}
