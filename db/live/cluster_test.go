package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/rdb"
)

// On a Redis Cluster, pub/sub spans the nodes: a subscriber through the
// cluster client (connected to one node) gets what is published on every
// master, and what Events publishes now, coalesced and in a batch.
func TestLiveEventsCrossClusterNodes(t *testing.T) {
	r := dbtest.Redis(t)
	if !r.Cluster {
		t.Skip("REDIS_URL is not a Redis Cluster (REDIS_URL=redis://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := r.Client.Subscribe(ctx, live.ChannelOf(r.Client))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var mu sync.Mutex // masters publish at once
	err := rdb.ForEachServer(ctx, r.Client, func(ctx context.Context, c *redis.Client) error {
		topic := "node:" + c.Options().Addr
		mu.Lock()
		want[topic] = true
		mu.Unlock()
		return c.Publish(ctx, live.ChannelOf(r.Client), live.Message{Topic: topic, Event: []byte(`{}`)}.Encode()).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 {
		t.Fatalf("published on masters %v, want several", want)
	}
	ev := live.New(r.Client)
	defer ev.Close()
	if err := ev.Publish(ctx, "goods:1", map[string]int{"remaining": 1}); err != nil {
		t.Fatal(err)
	}
	ev.PublishCoalesced("goods:2", map[string]int{"remaining": 2})
	var batch []live.Message
	for i := range 20 {
		batch = append(batch, live.Message{Topic: fmt.Sprintf("coupon:%d", i+1), Event: []byte(`{}`)})
		want[fmt.Sprintf("coupon:%d", i+1)] = true
	}
	if err := ev.PublishAll(ctx, batch); err != nil {
		t.Fatal(err)
	}
	want["goods:1"], want["goods:2"] = true, true
	for len(want) > 0 {
		select {
		case m := <-sub.Channel():
			lm, err := live.Decode(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			delete(want, lm.Topic)
		case <-ctx.Done():
			t.Fatalf("never received %v", want)
		}
	}
}

// On a Redis Cluster the events one process publishes reach a subscriber in
// the order they were sent, sent one by one or in batches: a topic's last
// value arrives last.
func TestLiveEventsKeepOrderOnCluster(t *testing.T) {
	r := dbtest.Redis(t)
	if !r.Cluster {
		t.Skip("REDIS_URL is not a Redis Cluster (REDIS_URL=redis://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sub := r.Client.Subscribe(ctx, live.ChannelOf(r.Client))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ev := live.New(r.Client)
	defer ev.Close()
	const n = 300
	for i := range n {
		if err := ev.Publish(ctx, "goods:1", map[string]int{"seq": i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := n; i < 2*n; i += 10 {
		var batch []live.Message
		for j := i; j < i+10; j++ {
			batch = append(batch, live.Message{Topic: "goods:1", Event: []byte(fmt.Sprintf(`{"seq":%d}`, j))})
		}
		if err := ev.PublishAll(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for want := 0; want < 2*n; want++ {
		select {
		case m := <-sub.Channel():
			lm, err := live.Decode(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ Seq int }
			json.Unmarshal(lm.Event, &got)
			if got.Seq != want {
				t.Fatalf("event %d arrived where %d was due: out of order", got.Seq, want)
			}
		case <-ctx.Done():
			t.Fatalf("event %d never arrived", want)
		}
	}
}
