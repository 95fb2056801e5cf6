package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/dbtest"
)

// Bursts on one topic under two coalescing keys (a slot's two goods) each end
// on their own last value; a burst without keys ends on the topic's last value.
func TestPublishCoalescedKey(t *testing.T) {
	r := dbtest.Redis(t)
	ctx := context.Background()
	sub := r.Client.Subscribe(ctx, db.LiveChannelOf(r.Client))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ev := db.NewEvents(r.Client)
	for i := int64(10); i >= 0; i-- {
		ev.PublishCoalescedKey("slot:1", "slot:1/goods:1", db.StockEvent{Type: "stock", GoodsID: 1, Remaining: i})
		ev.PublishCoalescedKey("slot:1", "slot:1/goods:2", db.StockEvent{Type: "stock", GoodsID: 2, Remaining: 100 + i})
		ev.PublishCoalesced("goods:1", db.StockEvent{Type: "stock", GoodsID: 1, Remaining: 50 + i})
	}
	want := map[string]int64{"slot:1/1": 0, "slot:1/2": 100, "goods:1/1": 50}
	last := map[string]int64{}
	done := func() bool {
		for k, v := range want {
			if got, ok := last[k]; !ok || got != v {
				return false
			}
		}
		return true
	}
	got := 0
	timeout := time.After(3 * time.Second)
	for !done() {
		select {
		case m := <-sub.Channel():
			var lm db.LiveMessage
			var se db.StockEvent
			json.Unmarshal([]byte(m.Payload), &lm)
			json.Unmarshal(lm.Event, &se)
			last[lm.Topic+"/"+string(rune('0'+se.GoodsID))] = se.Remaining
			got++
		case <-timeout:
			t.Fatalf("final values not delivered: %v after %d messages", last, got)
		}
	}
	if got > 12 {
		t.Fatalf("%d messages for 33 events: not coalesced", got)
	}
}
