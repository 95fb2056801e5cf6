package live_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/live"
)

// A user's events travel on their bucket's channel, sent one by one,
// coalesced or in a batch, in order; a follower of another bucket or of the
// broadcast channel receives none of them. On a Redis Cluster the buckets are
// sharded channels (SPUBLISH), each on the shard that owns it.
func TestUserEventsTravelOnTheirBucket(t *testing.T) {
	r := dbtest.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	follow := func(topic string) *redis.PubSub {
		t.Helper()
		ps, err := live.Subscribe(ctx, r.Client, topic)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ps.Close() })
		return ps
	}
	// User 1025 shares user 1's bucket (1025 mod live.UserBuckets).
	one, two, all := follow("user:1"), follow("user:2"), follow("goods:1")
	ev := live.New(r.Client)
	defer ev.Close()
	if err := ev.Publish(ctx, "user:1", map[string]int{"seq": 1}); err != nil {
		t.Fatal(err)
	}
	if err := ev.PublishAll(ctx, []live.Message{
		{Topic: "user:2", Event: []byte(`{"seq":2}`)},
		{Topic: "user:1", Event: []byte(`{"seq":2}`)},
		{Topic: "goods:1", Event: []byte(`{"seq":1}`)},
		{Topic: "user:1025", Event: []byte(`{"seq":1}`)},
	}); err != nil {
		t.Fatal(err)
	}
	ev.PublishCoalesced("user:2", map[string]int{"seq": 3})
	ev.Close() // sends what is queued
	end := []live.Message{{Topic: "user:1", Event: []byte(`{"end":1}`)}, {Topic: "user:2", Event: []byte(`{"end":1}`)}, {Topic: "goods:1", Event: []byte(`{"end":1}`)}}
	if err := live.New(r.Client).PublishAll(ctx, end); err != nil {
		t.Fatal(err)
	}
	read := func(ps *redis.PubSub) (got []string) {
		t.Helper()
		for {
			select {
			case m := <-ps.Channel():
				lm, err := live.Decode(m.Payload)
				if err != nil {
					t.Fatal(err)
				}
				if string(lm.Event) == `{"end":1}` {
					return got
				}
				got = append(got, lm.Topic+" "+string(lm.Event))
			case <-ctx.Done():
				t.Fatalf("end marker never came; got %v", got)
			}
		}
	}
	check := func(name string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s received %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s received %v, want %v", name, got, want)
			}
		}
	}
	check("user 1's bucket", read(one), `user:1 {"seq":1}`, `user:1 {"seq":2}`, `user:1025 {"seq":1}`)
	check("user 2's bucket", read(two), `user:2 {"seq":2}`, `user:2 {"seq":3}`)
	check("the broadcast channel", read(all), `goods:1 {"seq":1}`)
}
