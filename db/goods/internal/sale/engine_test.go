package sale

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
)

// newTestSale is a sale over a fresh Redis and store, with goods id of
// stock units (limit a shopper) on sale now, loaded into Redis.
func newTestSale(t *testing.T, id, stock, limit int64) (*Sale, Bucket) {
	t.Helper()
	b := backend.New(dbtest.DB(t), dbtest.Redis(t).Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s := NewSale(b)
	now := time.Now()
	g := &model.Goods{ID: id, SlotID: 1, SeckillPriceCents: 100, Stock: stock, LimitPerUser: limit,
		StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour), State: model.SlotLive}
	if _, err := s.Load(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	return s, Bucket0(id)
}

// decideScript run again under the same memo key (go-redis retrying a
// command whose reply was lost) answers as the first time and takes no
// second unit.
func TestDecideRetried(t *testing.T) {
	s, b := newTestSale(t, 1, 10, 1)
	ctx, now := context.Background(), time.Now()
	var grabs []batchedGrab
	for _, u := range []int64{1, 2, 1, 3} {
		grabs = append(grabs, batchedGrab{user: u, now: now})
	}
	keys, args := ScriptKeys(b, MemoKey(b, "batch-1")), s.decideArgs(b, false, "", grabs)
	first, err := s.Eval(ctx, decideScript, keys, args...).Text()
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Eval(ctx, decideScript, keys, args...).Text()
	if err != nil {
		t.Fatal(err)
	}
	_, lines1, _ := strings.Cut(first, "\n")
	_, lines2, _ := strings.Cut(second, "\n")
	if lines1 != lines2 {
		t.Fatalf("retried call answered\n%s\nfirst\n%s", second, first)
	}
	if n := strings.Count(first, "\nok:"); n != 3 || !strings.Contains(first, "\nlimit_reached") {
		t.Fatalf("call answered %q: want three wins and user 1's second grab at the limit", first)
	}
	if left, _ := s.bucketRemaining(b); left != 7 {
		t.Fatalf("remaining %d, want 7", left)
	}
}

// A keyed grab's refusal is kept under its key as its win would be: the
// key's retry is answered the same, even once the refusal no longer holds.
// With several buckets too, where sold out is found by asking every bucket
// (elsewhere), not by the home bucket's script alone (the model checker
// found a retry winning the unit a cancel gave back).
func TestDecideKeyedKeepsItsRefusal(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			s, _ := newTestSale(t, 1, 1, 1) // goods 2 is loaded below, with its buckets
			ctx := context.Background()
			g := &model.Goods{ID: 2, SlotID: 1, SeckillPriceCents: 100, Stock: int64(shards), LimitPerUser: 1, Shards: shards,
				StartAt: time.Now().Add(-time.Minute), EndAt: time.Now().Add(time.Hour), State: model.SlotLive}
			if _, err := s.Load(ctx, g); err != nil {
				t.Fatal(err)
			}
			var won *model.Order
			for u := int64(10); u < int64(10+shards); u++ { // every unit sold
				o := s.Decide(ctx, []Grab{{User: u, Goods: 2}})[0]
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				won = o.Order
			}
			keyed := []Grab{{User: 2, Goods: 2, Request: "k-1"}}
			if o := s.Decide(ctx, keyed)[0]; o.Err == nil || !strings.Contains(o.Err.Error(), "sold out") {
				t.Fatalf("keyed grab of sold-out goods: %+v, want sold out", o)
			}
			if err := s.Redis.RPush(ctx, FreeKey(Bucket{Goods: 2, N: HomeBucket(2, shards), K: shards}), strconv.FormatInt(won.Unit, 10)).Err(); err != nil { // a unit comes back
				t.Fatal(err)
			}
			if o := s.Decide(ctx, keyed)[0]; o.Err == nil || !strings.Contains(o.Err.Error(), "sold out") {
				t.Fatalf("the key's retry: %+v, want the first answer, sold out", o)
			}
			if o := s.Decide(ctx, []Grab{{User: 2, Goods: 2}})[0]; o.Err != nil {
				t.Fatalf("a new grab after the unit came back: %v", o.Err)
			}
		})
	}
}

// A grab refused by Redis tells this process's stock what the refusal was
// decided on before it is answered: a shopper told sold out who reads the
// stock from memory next reads none left, even while the win that took the
// last unit (here: taken past this process, as another's grab would be)
// has not told it yet. TestGrabsLinearizable met a read of "1 left" after
// its own sold out.
func TestRefusalTellsTheStockItWasDecidedOn(t *testing.T) {
	s, b := newTestSale(t, 1, 1, 1)
	ctx := context.Background()
	var told []StockEvent
	s.Stock = func(ev StockEvent) { told = append(told, ev) }
	// The last unit, taken by a call this process does not hear of.
	script, keys, args := s.GrabCall(7, 1, "elsewhere", time.Now())
	if res, err := s.Eval(ctx, script, keys, args...).Text(); err != nil || !strings.Contains(res, "\nok:") {
		t.Fatalf("the other grab: %q, %v", res, err)
	}
	if len(told) != 0 {
		t.Fatalf("told %v before any grab of this process", told)
	}
	if o := s.Decide(ctx, []Grab{{User: 8, Goods: 1}})[0]; o.Err == nil || !strings.Contains(o.Err.Error(), "sold out") {
		t.Fatalf("grab of the sold-out goods: %+v, want sold out", o)
	}
	if len(told) == 0 || told[len(told)-1].Remaining != 0 {
		t.Fatalf("the stock was told %+v by the time the refusal was answered, want none left", told)
	}
	if left, _ := s.bucketRemaining(b); left != 0 {
		t.Fatalf("remaining %d in Redis, want 0", left)
	}
}

// The stock of goods of several buckets makes an event only of a state
// newer than the one it holds: a refusal's answer repeating the state a
// win told already makes none (each event would be a new version).
func TestStockSumsTellOnlyWhatIsNew(t *testing.T) {
	var sums stockSums
	unread := func(Bucket) (int64, bool) { t.Fatal("a bucket seen already was read"); return 0, false }
	b0, b1 := Bucket{Goods: 9, N: 0, K: 2}, Bucket{Goods: 9, N: 1, K: 2}
	sums.add(b1, 3, 2, func(Bucket) (int64, bool) { return 5, true }) // bucket 0 read once
	total, v, ok := sums.add(b0, 5, 7, unread)
	if !ok || total != 8 {
		t.Fatalf("a new state: total %d, ok %v; want 8, true", total, ok)
	}
	if _, _, ok := sums.add(b0, 5, 7, unread); ok {
		t.Fatal("the same state again made an event")
	}
	if total, v2, ok := sums.add(b0, 4, 8, unread); !ok || total != 7 || v2 <= v {
		t.Fatalf("a newer state: total %d, version %d (after %d), ok %v; want 7, a newer version, true", total, v2, v, ok)
	}
}
