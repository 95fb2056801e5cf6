package scenarios

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Names of the results the win targets compare (issue 14).
const (
	HTTPWins  = "HTTP goods grab, every grab wins"
	RedisWins = "Redis limit, every grab wins (EVALSHA)"
	httpGrab  = "HTTP goods grab"
	// HTTPWinsNoWait is HTTPWins on a twin that acknowledges without WAIT.
	HTTPWinsNoWait = "HTTP goods grab, every grab wins, WAIT off"
	redisGrab      = "Redis limit (EVALSHA)"
)

// winsLimit is the per-user limit that lets every one of n grabs by users
// shoppers (request i is shopper i mod users) win.
func winsLimit(n, users int) int {
	return min((n+users-1)/users, 1000)
}

// benchGoodsWins grabs goods with stock for every request and a per-user
// limit that never refuses: every grab wins, so each pays the whole win path
// (script, live order event, flush row). Each turn ends once the flush has
// caught up, so the Redis work measured around the turn holds the wins' own
// follow-up work and none of it spills into the next target's turn.
func benchGoodsWins(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	limit := winsLimit(o.Requests, len(t.Users))
	id, err := t.benchGoodsFixtureLimit(ctx, "HTTP goods wins", o.Requests, limit)
	if err != nil {
		return nil, err
	}
	sc := &scenario{name: HTTPWins,
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, fmt.Sprintf("/api/goods/%d/grab", id), i, nil)
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			return t.checkGoods(ctx, r, "goods (every grab wins)", id, int64(o.Requests), int64(limit), res.Codes["ok"])
		},
	}
	t.measureRedis(ctx, sc, func() { t.settleGoods(ctx, id) })
	return sc, nil
}

// benchGoodsWinsNoWait is benchGoodsWins through the twin that does not
// wait for replicas (REDIS_WAIT_REPLICAS=0), run in the same rounds, so the
// cost of WAIT is the two scenarios' rates and p99s side by side. It runs
// only where the masters have replicas (else nothing waits).
func benchGoodsWinsNoWait(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	if t.noWait == nil {
		return nil, nil
	}
	limit := winsLimit(o.Requests, len(t.Users))
	id, err := t.benchGoodsFixtureLimit(ctx, "HTTP goods wins, WAIT off", o.Requests, limit)
	if err != nil {
		return nil, err
	}
	path := fmt.Sprintf("/api/goods/%d/grab", id)
	sc := &scenario{name: HTTPWinsNoWait,
		op: func(ctx context.Context, w int, i int64) string { return t.callVia(t.noWait, w, path, i, nil) },
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			return t.checkGoods(ctx, r, "goods (every grab wins, WAIT off)", id, int64(o.Requests), int64(limit), res.Codes["ok"])
		},
	}
	t.measureRedis(ctx, sc, func() { t.settleGoods(ctx, id) })
	return sc, nil
}

// reportWaitCost adds the cost of waiting for replicas: wins with WAIT
// against wins without, from the same rounds.
func (t *benchTarget) reportWaitCost(r *bench.Report) {
	on, off := r.Result(HTTPWins), r.Result(HTTPWinsNoWait)
	switch {
	case on == nil:
		return
	case off == nil:
		r.Extra["WAIT cost"] = "not measured: the target's Redis masters have no replica, so nothing waits (REDIS_WAIT_REPLICAS=auto); give a REDIS_URL whose masters have replicas"
	case off.Throughput > 0 && off.Latency.P99 > 0:
		r.Extra["WAIT cost"] = fmt.Sprintf("wins with WAIT (one per node per batch) %.0f/s, p99 %.2f ms; without %.0f/s, p99 %.2f ms: throughput %.2f×, p99 %.2f×",
			on.Throughput, on.Latency.P99, off.Throughput, off.Latency.P99, on.Throughput/off.Throughput, on.Latency.P99/off.Latency.P99)
	}
}

// benchRedisWins runs the grab script alone, as benchRedisLimit does, on
// goods where every grab wins: the script's own cost on the win path.
func benchRedisWins(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	if t.Goods == nil {
		return nil, nil
	}
	id, err := t.benchGoodsFixtureLimit(ctx, "Redis limit wins", o.Requests, winsLimit(o.Requests, len(t.Users)))
	if err != nil {
		return nil, err
	}
	sc := &scenario{name: RedisWins, op: t.grabScriptOp(id)}
	t.measureRedis(ctx, sc, func() { t.settleGoods(ctx, id) })
	return sc, nil
}

// grabScriptOp runs the goods grab script of id straight from Go: one EVALSHA, nothing after it.
func (t *benchTarget) grabScriptOp(id int64) bench.Op {
	return func(ctx context.Context, _ int, i int64) string {
		script, keys, args := t.Goods.GrabCall(t.Users[i%int64(len(t.Users))].ID, id, rdb.NewRequestID(), t.Goods.Now())
		res, err := script.Run(ctx, t.Goods.Redis, keys, args...).Text()
		if err != nil {
			return "transport"
		}
		// A word the whole call gets (not_loaded, moved, ...), or the
		// bucket's "remaining:slot:version" and then the grab's answer on
		// the next line: "ok:<record>", "sold_out", ...
		if _, answer, ok := strings.Cut(res, "\n"); ok {
			res = answer
		}
		code, _, _ := strings.Cut(res, ":")
		return code
	}
}

// settleGoods waits (10 s at most) until the goods' orders are all flushed
// and Redis runs no more scripts (follow-up work queued in the process, such
// as expiry enqueues, is done), so a turn's follow-up work is done before
// its Redis work is read.
func (t *benchTarget) settleGoods(ctx context.Context, id int64) {
	var st model.GoodsStats
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if t.benchCall("GET", fmt.Sprintf("/api/admin/goods/%d/stats", id), t.admin, nil, &st) != "ok" ||
			(st.Pending == 0 && st.DB.Unpaid+st.DB.Paid == st.Unpaid+st.Paid) {
			break
		}
		// Each look counts the goods' orders in the store: looking every
		// 20 ms cost the turn ≈ 3.7 µs of CPU a win (issue 21's profile).
		time.Sleep(100 * time.Millisecond)
	}
	last := -1.0
	for time.Now().Before(deadline) {
		st, err := readRedisStats(ctx, t.Goods.Redis)
		if err != nil || st.cmds["evalsha"][0] == last {
			return
		}
		last = st.cmds["evalsha"][0]
		time.Sleep(50 * time.Millisecond)
	}
}

// redisStats is what the Redis server (every master of a cluster) reports
// of its own work: CPU time and, per command, calls and time spent in it
// (INFO cpu and INFO commandstats), and the memory it holds (INFO memory).
type redisStats struct {
	cpuUS    float64
	cmds     map[string][2]float64 // command → calls, µs
	memBytes float64               // used_memory
}

func (a redisStats) minus(b redisStats) redisStats {
	d := redisStats{cpuUS: a.cpuUS - b.cpuUS, cmds: map[string][2]float64{}, memBytes: a.memBytes - b.memBytes}
	for k, v := range a.cmds {
		d.cmds[k] = [2]float64{v[0] - b.cmds[k][0], v[1] - b.cmds[k][1]}
	}
	return d
}

func (a *redisStats) add(b redisStats) {
	a.cpuUS += b.cpuUS
	a.memBytes += b.memBytes
	if a.cmds == nil {
		a.cmds = map[string][2]float64{}
	}
	for k, v := range b.cmds {
		a.cmds[k] = [2]float64{a.cmds[k][0] + v[0], a.cmds[k][1] + v[1]}
	}
}

// readRedisStats reads INFO cpu, commandstats and memory of every server of c.
func readRedisStats(ctx context.Context, c redis.UniversalClient) (redisStats, error) {
	var mu sync.Mutex
	all := redisStats{cmds: map[string][2]float64{}}
	err := rdb.ForEachServer(ctx, c, func(ctx context.Context, s *redis.Client) error {
		info, err := s.Info(ctx, "cpu", "commandstats", "memory").Result()
		if err != nil {
			return err
		}
		one := parseRedisStats(info)
		mu.Lock()
		all.add(one)
		mu.Unlock()
		return nil
	})
	return all, err
}

// parseRedisStats reads the used_cpu_sys/user, cmdstat_* and used_memory lines of an INFO answer.
func parseRedisStats(info string) redisStats {
	st := redisStats{cmds: map[string][2]float64{}}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			s, _ := strconv.ParseFloat(v, 64)
			st.cpuUS += s * 1e6
		case k == "used_memory":
			st.memBytes, _ = strconv.ParseFloat(v, 64)
		case strings.HasPrefix(k, "cmdstat_"):
			var calls, us float64
			for _, f := range strings.Split(v, ",") {
				name, val, _ := strings.Cut(f, "=")
				switch name {
				case "calls":
					calls, _ = strconv.ParseFloat(val, 64)
				case "usec":
					us, _ = strconv.ParseFloat(val, 64)
				}
			}
			st.cmds[strings.TrimPrefix(k, "cmdstat_")] = [2]float64{calls, us}
		}
	}
	return st
}

// redisWork is the Redis work measured around a scenario's turns, and the
// CPU time of this process (the in-process server and the load generator).
type redisWork struct {
	mu       sync.Mutex
	stats    redisStats
	procUS   float64
	err      error
	embedded bool // procUS includes the embedded Redis's work; stats are empty
}

// processCPU is this process's user and system CPU time so far, in µs.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
}

// measureRedis wraps the scenario's turns: the Redis server's stats are
// read before each turn and after it (and after settle, which waits for the
// turn's follow-up work), and the differences summed. Against a remote
// target the bench has no Redis of its own and measures nothing. The
// embedded Redis answers no INFO sections, but it runs inside this process,
// so this process's CPU is then the server's, the load's and Redis's together.
func (t *benchTarget) measureRedis(ctx context.Context, sc *scenario, settle func()) {
	if t.Goods == nil || t.Goods.Redis == nil {
		return
	}
	w := &redisWork{embedded: t.embedded}
	if t.redisWork == nil {
		t.redisWork = map[string]*redisWork{}
	}
	t.redisWork[sc.name] = w
	inner := sc.turn
	sc.turn = func(run func()) {
		before, err1 := t.readRedisStats(ctx)
		proc := processCPU()
		if inner != nil {
			inner(run)
		} else {
			run()
		}
		if settle != nil {
			settle()
		}
		proc = processCPU() - proc
		after, err2 := t.readRedisStats(ctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.procUS += proc
		if err := firstErr(err1, err2); err != nil {
			w.err = err
			return
		}
		w.stats.add(after.minus(before))
	}
}

// errEmbeddedInfo stands for a measure the embedded Redis cannot give.
var errEmbeddedInfo = errors.New("it answers neither INFO cpu nor INFO commandstats (a real redis-server does: set REDIS_URL)")

// notMeasured is the report's value of a measure that err kept from being taken.
func notMeasured(err error) string {
	if errors.Is(err, errEmbeddedInfo) {
		return "not measured on the embedded Redis: " + err.Error()
	}
	return "not measured: " + err.Error()
}

// readRedisStats reads the stats of the target's Redis, or errEmbeddedInfo
// without asking when it is the embedded one.
func (t *benchTarget) readRedisStats(ctx context.Context) (redisStats, error) {
	if t.embedded {
		return redisStats{}, errEmbeddedInfo
	}
	return readRedisStats(ctx, t.Goods.Redis)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// perOp is the work per request of res: CPU µs, EVALSHA µs, and the busiest
// commands' calls per request.
func (w *redisWork) perOp(res *bench.Result) (cpu, evalsha, proc float64, top string) {
	n := float64(res.Requests)
	if n == 0 {
		return 0, 0, 0, ""
	}
	type cmd struct {
		name      string
		calls, us float64
	}
	var cmds []cmd
	for k, v := range w.stats.cmds {
		if v[0] > 0 {
			cmds = append(cmds, cmd{k, v[0], v[1]})
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].calls > cmds[j].calls })
	var parts []string
	for i, c := range cmds {
		if i == 6 || c.calls/n < 0.01 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", c.name, c.calls/n))
	}
	return w.stats.cpuUS / n, w.stats.cmds["evalsha"][1] / n, w.procUS / n, strings.Join(parts, ", ")
}

// reportRedisWork adds the Redis work per request of each measured scenario
// and the issue 14 targets: wins against refusals (throughput and p99), and
// Redis CPU per win against the grab script's own.
func (t *benchTarget) reportRedisWork(r *bench.Report) {
	cpu, evalsha, proc := map[string]float64{}, map[string]float64{}, map[string]float64{}
	embedded := false
	for name, w := range t.redisWork {
		res := r.Result(name)
		if res == nil {
			continue
		}
		c, e, p, top := w.perOp(res)
		switch {
		case w.embedded:
			embedded = true
			proc[name] = p
			r.Extra["CPU per request: "+name] = fmt.Sprintf("this process (server, load generator and the embedded Redis together) %.1f µs; Redis's own share %s", p, notMeasured(errEmbeddedInfo))
		case w.err != nil:
			r.Extra["CPU per request: "+name] = notMeasured(w.err)
		default:
			cpu[name], evalsha[name], proc[name] = c, e, p
			r.Extra["CPU per request: "+name] = fmt.Sprintf("Redis %.1f µs (INFO cpu), of it EVALSHA %.1f µs; this process (server and load generator) %.1f µs; commands a request (INFO commandstats, scripts' own calls included): %s", c, e, p, top)
		}
	}
	r.AddRatio("HTTP goods grab, every grab wins / HTTP goods grab (target 1: ≥ 0.8)", HTTPWins, httpGrab)
	r.AddRatio("HTTP goods grab, every grab wins / Redis limit, every grab wins", HTTPWins, RedisWins)
	if win, refuse := r.Result(HTTPWins), r.Result(httpGrab); win != nil && refuse != nil && refuse.Throughput > 0 {
		r.Extra["target 1: wins vs refusals"] = fmt.Sprintf("%.0f wins/s against %.0f grabs/s (%.1f%% refused): %.2f× (target ≥ 0.8); p99 %.2f ms against %.2f ms (target ≤ 25 ms)",
			win.Throughput, refuse.Throughput, 100*float64(refuse.Requests-refuse.Codes["ok"])/float64(max(refuse.Requests, 1)),
			win.Throughput/refuse.Throughput, win.Latency.P99, refuse.Latency.P99)
	}
	if embedded {
		r.Extra["target 2: Redis work per win vs the grab script alone"] = notMeasured(errEmbeddedInfo)
	}
	if a, b := cpu[HTTPWins], cpu[RedisWins]; a > 0 && b > 0 {
		r.Extra["target 2: Redis work per win vs the grab script alone"] = fmt.Sprintf(
			"%.1f µs Redis CPU per HTTP win against %.1f µs per bare grab script win: %.2f× (target ≤ 1.5); EVALSHA time %.1f µs against %.1f µs; a refusal over HTTP %.1f µs, a bare refused script %.1f µs",
			a, b, a/b, evalsha[HTTPWins], evalsha[RedisWins], cpu[httpGrab], cpu[redisGrab])
	}
	if a, b := proc[HTTPWins], proc[httpGrab]; embedded && a > 0 && b > 0 {
		r.Extra["machine CPU per win vs per refusal"] = fmt.Sprintf("%.1f µs per HTTP win against %.1f µs per HTTP grab of the refusal run (this process: server, load generator and the embedded Redis together): a win costs %.2f× a refusal, so on a saturated machine wins/refusals ≤ %.2f",
			a, b, a/b, b/a)
	} else if a, b := proc[HTTPWins]+cpu[HTTPWins], proc[httpGrab]+cpu[httpGrab]; a > 0 && b > 0 {
		r.Extra["machine CPU per win vs per refusal"] = fmt.Sprintf("%.1f µs (process %.1f + Redis %.1f) per HTTP win against %.1f µs (%.1f + %.1f) per HTTP grab of the refusal run: a win costs %.2f× a refusal, so on a saturated machine wins/refusals ≤ %.2f",
			a, proc[HTTPWins], cpu[HTTPWins], b, proc[httpGrab], cpu[httpGrab], a/b, b/a)
	}
}
