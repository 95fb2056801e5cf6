package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/model"
)

// HTTPJoin names the waiting-room join scenario's result.
const HTTPJoin = "HTTP waiting-room join"

// benchQueueJoin is issue 22's waiting room at scale, in the load tool:
// every request is a shopper joining the waiting room of queue goods before
// its start, each a new ticket (shopper i joins goods i ÷ users, so no
// shopper joins one goods twice). It measures what a join costs (machine
// and Redis CPU, commands) against the sold-out refusal of the same run,
// the Redis memory a waiting shopper holds (INFO memory around the turns)
// and the in-process server's goroutines before and after the turns: the
// room keeps no goroutine per shopper.
func benchQueueJoin(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	ids, err := t.queueGoods(o)
	if err != nil {
		return nil, err
	}
	users := int64(len(t.tokens))
	var mu sync.Mutex
	goroutines := [2]int{-1, 0} // in the server before the first turn and after the last
	sc := &scenario{name: HTTPJoin,
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, fmt.Sprintf("/api/goods/%d/queue", ids[i/users]), i, nil)
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			var joined, held int64
			for _, id := range ids {
				var q struct {
					Queue model.QueueStats `json:"queue"`
				}
				if err := t.mustCall("GET", fmt.Sprintf("/api/admin/goods/%d/queue", id), t.admin, nil, &q); err != nil {
					return err
				}
				joined += q.Queue.Joined
				if t.Goods != nil && !t.embedded {
					n, err := t.Fair.QueueMemory(ctx, id)
					if err != nil {
						return err
					}
					held += n
				}
			}
			r.Checks = append(r.Checks, bench.Check{Name: "queue: each join holds one place",
				OK:     joined == res.Codes["ok"],
				Detail: fmt.Sprintf("%d joined over %d waiting rooms, %d joins answered 2xx", joined, len(ids), res.Codes["ok"])})
			if held > 0 && joined > 0 {
				// bytes a shopper × 1,000,000 shoppers ÷ 1,000,000 bytes a MB: the same number
				per := float64(held) / float64(joined)
				r.Extra["Redis memory a waiting shopper"] = fmt.Sprintf("%.1f bytes (MEMORY USAGE of the %d waiting rooms' keys, %d shoppers): a million waiting ≈ %.0f MB (target ≤ 200 MB)",
					per, len(ids), joined, per)
				t.joinBytes = per
			}
			if t.Goods != nil {
				r.Extra["server goroutines around the join turns"] = fmt.Sprintf("%d before the first turn, %d after the last, with %d shoppers waiting (no goroutine a shopper)",
					goroutines[0], goroutines[1], joined)
			}
			return nil
		},
	}
	if t.Goods != nil { // the server runs in this process: count its goroutines
		sc.turn = func(run func()) {
			mu.Lock()
			if goroutines[0] < 0 {
				goroutines[0] = runtime.NumGoroutine()
			}
			mu.Unlock()
			run()
			time.Sleep(100 * time.Millisecond) // let the turn's requests' goroutines end
			mu.Lock()
			goroutines[1] = runtime.NumGoroutine()
			mu.Unlock()
		}
	}
	t.measureRedis(ctx, sc, nil)
	return sc, nil
}

// queueGoods creates, through the admin API, enough goods of mode queue
// (their sale an hour away, so every join waits) for each shopper to join
// each once over the scenario's requests.
func (t *benchTarget) queueGoods(o *Options) ([]int64, error) {
	now := time.Now().UTC()
	slot, err := t.benchSlot("bench waiting rooms", now.Add(time.Hour), now.Add(2*time.Hour))
	if err != nil {
		return nil, err
	}
	ids := make([]int64, (o.Requests+len(t.tokens)-1)/len(t.tokens))
	for i := range ids {
		var g goodsView
		if err := t.mustCall("POST", "/api/admin/goods", t.admin, map[string]any{
			"slot_id": slot, "title": fmt.Sprintf("waiting room %d", i+1), "description": "load bench", "price_cents": 9900,
			"seckill_price_cents": 990, "stock": o.Stock, "limit_per_user": 1, "mode": "queue", "queue_rate": 100, "admission_seconds": 120,
		}, &g); err != nil {
			return nil, err
		}
		if g.Goods.Mode != "queue" {
			return nil, fmt.Errorf("goods %d: mode %q, want queue", g.Goods.ID, g.Goods.Mode)
		}
		ids[i] = g.Goods.ID
	}
	return ids, nil
}

// reportJoins adds issue 22's cost of a join: machine CPU and Redis work
// against a sold-out refusal of the same run, the target of a million
// waiting shoppers' memory, and the growth of Redis's used memory over the
// join turns.
func (t *benchTarget) reportJoins(r *bench.Report) {
	join, refuse := r.Result(HTTPJoin), r.Result(httpSoldOut)
	wj, wr := t.redisWork[HTTPJoin], t.redisWork[httpSoldOut]
	if join == nil || wj == nil || join.Requests == 0 {
		return
	}
	cj, _, pj, top := wj.perOp(join)
	if wj.err != nil { // the embedded Redis: its work is in this process's
		cj = 0
	}
	line := fmt.Sprintf("%.1f µs of machine CPU a join (process %.1f + Redis %.1f); %.0f joins/s, p99 %.2f ms", pj+cj, pj, cj, join.Throughput, join.Latency.P99)
	if refuse != nil && wr != nil && refuse.Requests > 0 {
		cr, _, pr, _ := wr.perOp(refuse)
		if wr.err != nil {
			cr = 0
		}
		line += fmt.Sprintf("; a sold-out refusal %.1f µs (%.1f + %.1f): a join is %.2f× a refusal", pr+cr, pr, cr, (pj+cj)/(pr+cr))
	}
	if wj.err == nil {
		line += "; Redis commands a join: " + top
	}
	r.Extra["a waiting-room join vs a sold-out refusal"] = line
	if per := t.joinBytes; per > 0 {
		r.Targets = append(r.Targets, bench.Target{
			Name:     "Redis memory of a million waiting shoppers (MEMORY USAGE of the rooms)",
			Measured: fmt.Sprintf("%.1f bytes a shopper × 1,000,000 = %.0f MB", per, per),
			Goal:     "≤ 200 MB", Met: per <= 200,
		})
	}
	if ok := join.Codes["ok"]; wj.err == nil && ok > 0 {
		r.Extra["Redis used_memory over the join turns"] = fmt.Sprintf("%+.1f MB, %.0f bytes a join (the whole server's: the rooms, and what its clients' buffers held as the turns ended)",
			wj.stats.memBytes/1e6, wj.stats.memBytes/float64(ok))
	}
}
