package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/rdb"
)

// Issue 14 target 3: one hot item across K Redis shards. The same hot item
// (stock for every request, a limit that never refuses: every grab wins) is
// grabbed over HTTP with its stock in one bucket and in three; around each
// turn every Redis node's INFO commandstats and INFO cpu are read, so the
// report gives each node's share of the item's commands and the total Redis
// CPU. On a three-node cluster K = 3 should put about a third on each node
// (target: the hottest ≤ 45%); on one Redis the shares are 100% either way.

// HotItemName names the hot-item scenario of k buckets.
func HotItemName(k int, soldOut bool) string {
	if soldOut {
		return fmt.Sprintf("HTTP hot item, -stock units then sold out, K=%d", k)
	}
	return fmt.Sprintf("HTTP hot item, every grab wins, K=%d", k)
}

func benchHotItem1(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	return benchHotItem(ctx, o, t, 1, false)
}

func benchHotItem3(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	return benchHotItem(ctx, o, t, 3, false)
}

func benchHotSoldOut1(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	return benchHotItem(ctx, o, t, 1, true)
}

func benchHotSoldOut3(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	return benchHotItem(ctx, o, t, 3, true)
}

// benchHotItem grabs one item of k buckets: with stock for every request
// and a limit that never refuses, or (soldOut) with -stock units and a
// limit of 1, so most grabs meet an empty bucket.
func benchHotItem(ctx context.Context, o *Options, t *benchTarget, k int, soldOut bool) (*scenario, error) {
	stock, limit := o.Requests, winsLimit(o.Requests, len(t.Users))
	if soldOut {
		stock, limit = o.Stock, 1
	}
	name, label := HotItemName(k, soldOut), fmt.Sprintf("hot item K=%d", k)
	if soldOut {
		label += " (sold out)"
	}
	id, err := t.benchGoodsFixtureShards(ctx, label, stock, limit, k)
	if err != nil {
		return nil, err
	}
	nodes := &nodeWork{}
	var grabs0, trips0 int64
	if t.Goods != nil {
		grabs0, trips0 = t.Goods.GrabTrips(id)
	}
	sc := &scenario{name: name,
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, fmt.Sprintf("/api/goods/%d/grab", id), i, nil)
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			nodes.report(r, name, k, res.Requests)
			if t.Goods == nil {
				return t.checkGoods(ctx, r, label, id, int64(stock), int64(limit), res.Codes["ok"])
			}
			if grabs, trips := t.Goods.GrabTrips(id); k > 1 && grabs > grabs0 {
				r.Extra["target 3: round trips a grab, "+name] = fmt.Sprintf("%.3f script round trips a grab (%d grabs, %d trips; 1 while the home bucket has stock, 3 for a unit from another bucket)",
					float64(trips-trips0)/float64(grabs-grabs0), grabs-grabs0, trips-trips0)
			}
			return t.checkGoods(ctx, r, label, id, int64(stock), int64(limit), res.Codes["ok"])
		},
	}
	if t.Goods != nil && t.Goods.Redis != nil {
		sc.turn = func(run func()) {
			if t.embedded {
				run()
				t.settleGoods(ctx, id)
				nodes.add(nil, nil, errEmbeddedInfo)
				return
			}
			before, err1 := readNodeStats(ctx, t.Goods.Redis)
			run()
			t.settleGoods(ctx, id)
			after, err2 := readNodeStats(ctx, t.Goods.Redis)
			nodes.add(before, after, firstErr(err1, err2))
		}
	}
	return sc, nil
}

// benchGoodsFixtureShards is benchGoodsFixtureLimit with the stock in k
// Redis buckets (0: as the server chooses), in a live slot of its own.
func (t *benchTarget) benchGoodsFixtureShards(ctx context.Context, title string, stock, limit, k int) (int64, error) {
	now := time.Now().UTC()
	slot, err := t.benchSlot("bench "+title, now.Add(-time.Minute), now.Add(2*time.Hour))
	if err != nil {
		return 0, err
	}
	var g struct {
		Goods struct {
			ID     int64 `json:"id"`
			Shards int   `json:"shards"`
		} `json:"goods"`
	}
	body := map[string]any{
		"slot_id": slot, "title": title, "description": "load bench", "price_cents": 9900,
		"seckill_price_cents": 990, "stock": stock, "limit_per_user": limit,
	}
	if k > 0 {
		body["shards"] = k
	}
	err = t.mustCall("POST", "/api/admin/goods", t.admin, body, &g)
	if err == nil && k > 0 && g.Goods.Shards != k {
		err = fmt.Errorf("hot item: goods %d has %d shards, want %d", g.Goods.ID, g.Goods.Shards, k)
	}
	return g.Goods.ID, err
}

// nodeStats is each Redis node's stats, by address.
type nodeStats map[string]redisStats

// readNodeStats reads INFO cpu and commandstats of every master of c, each apart.
func readNodeStats(ctx context.Context, c redis.UniversalClient) (nodeStats, error) {
	var mu sync.Mutex
	out := nodeStats{}
	err := rdb.ForEachServer(ctx, c, func(ctx context.Context, s *redis.Client) error {
		info, err := s.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		out[s.Options().Addr] = parseRedisStats(info)
		mu.Unlock()
		return nil
	})
	return out, err
}

// nodeWork sums each node's work over a scenario's turns.
type nodeWork struct {
	mu    sync.Mutex
	nodes map[string]*redisStats
	err   error
}

func (w *nodeWork) add(before, after nodeStats, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.err = err
		return
	}
	if w.nodes == nil {
		w.nodes = map[string]*redisStats{}
	}
	for addr, a := range after {
		d := a.minus(before[addr])
		if w.nodes[addr] == nil {
			w.nodes[addr] = &redisStats{}
		}
		w.nodes[addr].add(d)
	}
}

// calls is the number of commands a node ran (scripts count once; the
// calls scripts make inside are not commands of the item's clients).
func (s *redisStats) calls() (n float64) {
	for name, v := range s.cmds {
		if name == "info" { // the bench's own reads
			continue
		}
		n += v[0]
	}
	return n
}

// report adds each node's share of the commands and of the CPU, and the
// target 3 verdict for k = 3.
func (w *nodeWork) report(r *bench.Report, name string, k int, requests int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := "target 3: Redis nodes, " + name
	if w.err != nil {
		r.Extra[key] = notMeasured(w.err)
		return
	}
	addrs := make([]string, 0, len(w.nodes))
	var total, cpu float64
	for addr, st := range w.nodes {
		addrs = append(addrs, addr)
		total += st.calls()
		cpu += st.cpuUS
	}
	sort.Strings(addrs)
	var parts []string
	hottest := 0.0
	for _, addr := range addrs {
		st := w.nodes[addr]
		share := 100 * st.calls() / max(total, 1)
		hottest = max(hottest, share)
		parts = append(parts, fmt.Sprintf("%s %.1f%% of commands (EVALSHA %.0f), CPU %.2f s", addr, share, st.cmds["evalsha"][0], st.cpuUS/1e6))
	}
	verdict := ""
	if k > 1 {
		verdict = fmt.Sprintf("; hottest node %.1f%% (target ≤ 45%% on three nodes)", hottest)
	}
	r.Extra[key] = fmt.Sprintf("%d nodes: %s; total Redis CPU %.2f s (%.1f µs a grab), %.2f commands a grab%s",
		len(addrs), strings.Join(parts, "; "), cpu/1e6, cpu/float64(max(requests, 1)), total/float64(max(requests, 1)), verdict)
}
