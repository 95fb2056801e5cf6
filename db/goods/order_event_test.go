package goods_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// A grab's live order event, encoded on the grab path without reflection,
// is byte for byte what encoding/json makes of the OrderEvent.
func TestOrderEventEncoding(t *testing.T) { eachShards(t, testOrderEventEncoding) }

func testOrderEventEncoding(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(3, 1)
	sub, err := live.Subscribe(e.Ctx, e.S.Redis, live.TopicUser(7))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	o := e.Grab(7, g.ID)
	want, _ := json.Marshal(sale.OrderEvent{Type: "order", Order: o})
	timeout := time.After(time.Minute)
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

// Wins decided together in a batch are read and encoded once by the batch:
// each shopper's answer (GrabFairJSON) is its order's own JSON, and its one
// live order event carries that same JSON, never another shopper's.
func TestBatchedWinsShareOneEncoding(t *testing.T) { eachShards(t, testBatchedWinsShareOneEncoding) }

func testBatchedWinsShareOneEncoding(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	const users = 60
	g := e.LiveGoods(users, 1)
	subs := make([]*redis.PubSub, users+1)
	for u := int64(1); u <= users; u++ {
		sub, err := live.Subscribe(e.Ctx, e.S.Redis, live.TopicUser(u))
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs[u] = sub
	}
	type won struct {
		o   *model.Order
		enc []byte
	}
	answers := make([]won, users+1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for u := int64(1); u <= users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out := e.S.Decide(e.Ctx, []goods.Grab{{User: u, Goods: g.ID}})[0]
			o, enc, err := out.Order, out.JSON, out.Err
			if err != nil {
				t.Errorf("user %d: %v", u, err)
				return
			}
			answers[u] = won{o, enc}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	for u := int64(1); u <= users; u++ {
		a := answers[u]
		want, err := json.Marshal(a.o) // encoding/json checks and compacts what MarshalJSON gives
		if err != nil {
			t.Fatal(err)
		}
		if a.o.UserID != u || string(a.enc) != string(want) {
			t.Fatalf("user %d: answer %s for order %+v, want %s", u, a.enc, a.o, want)
		}
		event, _ := json.Marshal(sale.OrderEvent{Type: "order", Order: a.o})
		timeout := time.After(time.Minute)
	wait:
		for {
			select {
			case m := <-subs[u].Channel():
				msg, err := live.Decode(m.Payload)
				if err != nil {
					t.Fatal(err)
				}
				if msg.Topic != live.TopicUser(u) {
					continue // another user of the same bucket channel
				}
				if string(msg.Event) != string(event) {
					t.Fatalf("user %d: order event\n got %s\nwant %s", u, msg.Event, event)
				}
				break wait
			case <-timeout:
				t.Fatalf("user %d: no order event", u)
			}
		}
	}
}
