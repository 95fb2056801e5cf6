package live_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/live"
)

// Bursts on one topic under two coalescing keys (a slot's two goods) each end
// on their own last value; a burst without keys ends on the topic's last value.
func TestPublishCoalescedKey(t *testing.T) {
	r := dbtest.Redis(t)
	ctx := context.Background()
	sub := r.Client.Subscribe(ctx, live.ChannelOf(r.Client))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ev := live.New(r.Client)
	for i := int64(10); i >= 0; i-- {
		ev.PublishCoalescedKey("slot:1", "slot:1/goods:1", stockEvent{Type: "stock", GoodsID: 1, Remaining: i})
		ev.PublishCoalescedKey("slot:1", "slot:1/goods:2", stockEvent{Type: "stock", GoodsID: 2, Remaining: 100 + i})
		ev.PublishCoalesced("goods:1", stockEvent{Type: "stock", GoodsID: 1, Remaining: 50 + i})
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
	timeout := time.After(time.Minute)
	for !done() {
		select {
		case m := <-sub.Channel():
			var se stockEvent
			lm, err := live.Decode(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
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

// The wire form of a live message is the topic, a newline and the event's
// JSON; the event may itself hold newlines, the topic never does.
func TestLiveMessageWire(t *testing.T) {
	for _, m := range []live.Message{
		{Topic: "goods:7", Event: []byte(`{"type":"stock","remaining":3}`)},
		{Topic: "user:1", Event: []byte("{\n  \"a\": \"x\\ny\"\n}")},
		{Topic: "slot:2", Event: []byte(`{}`)},
	} {
		got, err := live.Decode(string(m.Encode()))
		if err != nil || got.Topic != m.Topic || string(got.Event) != string(m.Event) {
			t.Errorf("%q: round trip gave %q %q %v", m.Topic, got.Topic, got.Event, err)
		}
	}
	for _, bad := range []string{"", "no-newline", "\n{}"} {
		if _, err := live.Decode(bad); err == nil {
			t.Errorf("%q was read as a message", bad)
		}
	}
}

// stockEvent has the shape of the goods' stock event.
type stockEvent struct {
	Type      string `json:"type"`
	GoodsID   int64  `json:"goods_id"`
	Remaining int64  `json:"remaining"`
}

// Versioned events that reach the publisher out of order still end the burst
// on the newest: an older one than the key has seen is dropped.
func TestPublishCoalescedVersionKeepsTheNewest(t *testing.T) {
	r := dbtest.Redis(t)
	ctx := context.Background()
	sub := r.Client.Subscribe(ctx, live.ChannelOf(r.Client))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ev := live.New(r.Client)
	defer ev.Close()
	for _, v := range []int64{5, 9, 7, 8, 6} { // the answer of version 9 was the last change
		ev.PublishCoalescedVersion("goods:1", "goods:1", v, stockEvent{Type: "stock", GoodsID: 1, Remaining: 100 - v})
	}
	var got []int64
	for len(got) < 2 {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, err := live.Decode(msg.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var se stockEvent
		json.Unmarshal(m.Event, &se)
		got = append(got, se.Remaining)
	}
	if got[0] != 95 || got[1] != 91 {
		t.Fatalf("sent remaining %v, want [95 91]: the first at once, then version 9's", got)
	}
}

// The coalescing window follows SetWindow (the stock_push_ms steering
// switch): the second event of a burst leaves no earlier than the window
// after the first was published. A lower bound only, which a slow machine
// cannot break.
func TestPublishCoalescedFollowsSetWindow(t *testing.T) {
	r := dbtest.Redis(t)
	ctx := context.Background()
	sub := r.Client.Subscribe(ctx, live.ChannelOf(r.Client))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ev := live.New(r.Client)
	defer ev.Close()
	const window = 800 * time.Millisecond
	ev.SetWindow(window)
	if ev.Window() != window {
		t.Fatalf("window %v, want %v", ev.Window(), window)
	}
	start := time.Now()
	ev.PublishCoalesced("goods:7", stockEvent{Type: "stock", GoodsID: 7, Remaining: 2})
	ev.PublishCoalesced("goods:7", stockEvent{Type: "stock", GoodsID: 7, Remaining: 1})
	timeout := time.After(time.Minute)
	for {
		select {
		case m := <-sub.Channel():
			lm, err := live.Decode(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			var se stockEvent
			json.Unmarshal(lm.Event, &se)
			if se.Remaining != 1 {
				continue
			}
			if d := time.Since(start); d < window {
				t.Fatalf("the burst's last event left %v after the first, within the %v window", d, window)
			}
			return
		case <-timeout:
			t.Fatal("the burst's last event never left")
		}
	}
}
