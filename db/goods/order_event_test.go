package goods_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/live"
)

// A grab's live order event, encoded on the grab path without reflection,
// is byte for byte what encoding/json makes of the OrderEvent.
func TestOrderEventEncoding(t *testing.T) { eachShards(t, testOrderEventEncoding) }

func testOrderEventEncoding(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.liveGoods(3, 1)
	sub, err := live.Subscribe(e.ctx, e.s.Redis, live.TopicUser(7))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	o := e.grab(7, g.ID)
	want, _ := json.Marshal(goods.OrderEvent{Type: "order", Order: o})
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m := <-sub.Channel():
			msg, err := live.Decode(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Topic != live.TopicUser(7) {
				continue
			}
			if string(msg.Event) != string(want) {
				t.Fatalf("order event\n got %s\nwant %s", msg.Event, want)
			}
			return
		case <-timeout:
			t.Fatalf("no order event on %s", live.TopicUser(7))
		}
	}
}
