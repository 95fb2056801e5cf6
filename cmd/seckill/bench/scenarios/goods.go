package scenarios

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// benchGoodsFixture creates a live slot and goods of the given stock (limit 1 a user) through the admin API.
func (t *benchTarget) benchGoodsFixture(ctx context.Context, title string, stock int) (int64, error) {
	return t.benchGoodsFixtureLimit(ctx, title, stock, 1)
}

// benchGoodsFixtureLimit is benchGoodsFixture with its own per-user limit.
func (t *benchTarget) benchGoodsFixtureLimit(ctx context.Context, title string, stock, limit int) (int64, error) {
	return t.benchGoodsFixtureShards(ctx, title, stock, limit, 0)
}

// benchSlot creates a slot from start to end through the admin API.
func (t *benchTarget) benchSlot(title string, start, end time.Time) (int64, error) {
	var slot struct {
		Slot struct {
			ID int64 `json:"id"`
		} `json:"slot"`
	}
	err := t.mustCall("POST", "/api/admin/slots", t.admin, map[string]any{"title": title, "start_at": start, "end_at": end}, &slot)
	return slot.Slot.ID, err
}

// benchGoods grabs seckill goods over HTTP with WebSocket watchers, then
// checks no oversell, nobody over the limit, and SQLite equal to Redis.
func benchGoods(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	id, err := t.benchGoodsFixture(ctx, "HTTP goods", o.Stock)
	if err != nil {
		return nil, err
	}
	w, err := t.watch(o.Watchers, live.TopicGoods(id), "remaining")
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var done []time.Time
	sc := &scenario{name: httpGrab,
		op: func(ctx context.Context, w int, i int64) string {
			code := t.loadCall(w, fmt.Sprintf("/api/goods/%d/grab", id), i, nil)
			if code == "ok" {
				now := time.Now()
				mu.Lock()
				done = append(done, now)
				mu.Unlock()
			}
			return code
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			time.Sleep(2 * live.CoalesceWindow) // let the last coalesced stock event arrive
			w.close()
			if p50, p99, n := w.lag(int64(o.Stock), done); n > 0 {
				r.Extra["WebSocket stock event lag"] = fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (%d grab×subscriber pairs, %d subscribers, events coalesced per %s)", p50, p99, n, o.Watchers, live.CoalesceWindow)
			}
			return t.checkGoods(ctx, r, "goods", id, int64(o.Stock), 1, res.Codes["ok"])
		},
	}
	t.measureRedis(ctx, sc, nil)
	return sc, nil
}

// checkGoods waits for the flush of the goods to catch up, then checks no
// oversell, nobody over the limit, and the store equal to Redis; label
// names the scenario in the checks.
func (t *benchTarget) checkGoods(ctx context.Context, r *bench.Report, label string, id, stock, limit, ok int64) error {
	var st model.GoodsStats
	if err := t.waitFlushed(ctx, fmt.Sprintf("/api/admin/goods/%d/stats", id), &st, func() bool { return (st.Pending == 0 && st.DB.Unpaid+st.DB.Paid == st.Unpaid+st.Paid) }); err != nil {
		return err
	}
	perUser, err := maxOrdersPerUser(ctx, t.Backend.SQL, id)
	if err != nil {
		return err
	}
	r.Checks = append(r.Checks,
		bench.Check{Name: label + ": no oversell", OK: ok <= stock && st.Unpaid+st.Paid == ok, Detail: fmt.Sprintf("%d orders for stock %d (Redis: %d unpaid + %d paid)", ok, stock, st.Unpaid, st.Paid)},
		bench.Check{Name: label + ": stock adds up", OK: st.Remaining+st.Unpaid+st.Paid == st.Stock, Detail: fmt.Sprintf("remaining %d + unpaid %d + paid %d = stock %d", st.Remaining, st.Unpaid, st.Paid, st.Stock)},
		bench.Check{Name: label + ": nobody over the limit", OK: perUser <= limit, Detail: fmt.Sprintf("most orders by one user in SQLite: %d (limit %d)", perUser, limit)},
		bench.Check{Name: label + ": SQLite equals Redis after the flush", OK: st.DB.Unpaid+st.DB.Paid == st.Unpaid+st.Paid && st.DB.Conflicts == 0,
			Detail: fmt.Sprintf("SQLite %d live orders, Redis %d, %d refused", st.DB.Unpaid+st.DB.Paid, st.Unpaid+st.Paid, st.DB.Conflicts)},
	)
	return nil
}

// maxOrdersPerUser is the most live orders one user holds on the goods in the durable store.
func maxOrdersPerUser(ctx context.Context, sq *sqldb.DB, goodsID int64) (int64, error) {
	var n int64
	err := sq.R.QueryRowContext(ctx, `SELECT COALESCE(MAX(c), 0) FROM (SELECT COUNT(*) AS c FROM orders
		WHERE goods_id = ? AND status IN ('unpaid', 'paid') GROUP BY user_id) AS per_user`, goodsID).Scan(&n)
	return n, err
}

// benchRedisLimit runs the same grab script straight from Go at the same
// concurrency, with no HTTP and nothing after it (no expiry task, no live
// events): the most the grab could do on this machine.
func benchRedisLimit(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	if t.Goods == nil {
		return nil, nil // remote target: the bench has no Redis of its own
	}
	id, err := t.benchGoodsFixture(ctx, "Redis limit", o.Stock)
	if err != nil {
		return nil, err
	}
	sc := &scenario{name: redisGrab, op: t.grabScriptOp(id)}
	t.measureRedis(ctx, sc, nil)
	return sc, nil
}

// benchNaive grabs through the SQLite-transaction baseline behind the same server.
func benchNaive(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	if t.naive == nil {
		return nil, nil // only an in-process server mounts the baseline
	}
	id, err := t.naive.CreateGoods(ctx, int64(o.Stock))
	if err != nil {
		return nil, err
	}
	return &scenario{name: "naive SQLite grab",
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, fmt.Sprintf("/api/bench/naive/%d/grab", id), i, nil)
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			stock, orders, perUser, err := t.naive.Counts(ctx, id)
			if err != nil {
				return err
			}
			r.Checks = append(r.Checks,
				bench.Check{Name: "naive: no oversell", OK: orders == res.Codes["ok"] && stock+orders == int64(o.Stock) && stock >= 0, Detail: fmt.Sprintf("%d orders + %d left = %d", orders, stock, o.Stock)},
				bench.Check{Name: "naive: nobody over the limit", OK: perUser <= 1, Detail: fmt.Sprintf("most orders by one user: %d", perUser)},
			)
			return nil
		},
	}, nil
}
