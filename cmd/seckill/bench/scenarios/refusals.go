package scenarios

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// Issue 21: in a real sale nearly every grab arrives after the item is gone,
// so the refusal is the hot path. The sold-out scenario grabs an item of one
// unit, sold by the first grab, from every shopper: each later grab is a
// sold-out refusal, which a web process answers from memory (db/goods
// refusals.go). Its cost is set against the HTTP floor (GET /healthz) of the
// same run: machine CPU a request (this process's and Redis's), Redis
// commands a request, and requests a second.

// httpSoldOut names the sold-out scenario's result.
const httpSoldOut = "HTTP grab of a sold-out item (refusals)"

func benchSoldOut(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	id, err := t.benchGoodsFixtureShards(ctx, "sold out", 1, 1, 1)
	if err != nil {
		return nil, err
	}
	sc := &scenario{name: httpSoldOut,
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, fmt.Sprintf("/api/goods/%d/grab", id), i, nil)
		},
	}
	t.measureRedis(ctx, sc, nil)
	return sc, nil
}

// HTTPDoors names the doors' floor scenario's result.
const HTTPDoors = "HTTP doors' floor (a grab refused past its doors, without the engine)"

// benchDoors loads the doors' floor (cmd/seckill/naive, doorsOnly): the
// sold-out scenario's request, passing every door the goods grab passes,
// answered the sold-out refusal without the sale engine. Set against the
// no-op and the refusal of the same run, it parts what the doors cost
// from what the engine adds.
func benchDoors(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	if t.naive == nil {
		return nil, nil // only an in-process server mounts the bench's routes
	}
	sc := &scenario{name: HTTPDoors,
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, "/api/bench/doors/1/grab", i, nil)
		},
	}
	t.measureRedis(ctx, sc, nil)
	return sc, nil
}

// reportDoors parts a refusal's cost: the doors' floor against the no-op
// (what the doors every grab passes cost) and the refusal against the
// doors' floor (what the engine adds), rates and machine CPU of one run.
func (t *benchTarget) reportDoors(r *bench.Report) {
	refuse, doors, floor := r.Result(httpSoldOut), r.Result(HTTPDoors), r.Result(HTTPFloor)
	wr, wd, wf := t.redisWork[httpSoldOut], t.redisWork[HTTPDoors], t.redisWork[HTTPFloor]
	if refuse == nil || doors == nil || floor == nil || wr == nil || wd == nil || wf == nil ||
		refuse.Requests == 0 || doors.Requests == 0 || floor.Requests == 0 {
		return
	}
	cr, cd, cf := machineCPU(wr, refuse), machineCPU(wd, doors), machineCPU(wf, floor)
	r.Extra["the doors' floor vs no-op requests (what a grab's doors cost)"] = fmt.Sprintf("%.0f/s against %.0f GET /healthz/s: %.2f×; machine CPU %.1f µs against %.1f µs: %.2f×",
		doors.Throughput, floor.Throughput, doors.Throughput/floor.Throughput, cd, cf, cd/cf)
	r.Extra["sold-out refusals vs the doors' floor (what the engine adds)"] = fmt.Sprintf("%.0f refusals/s against %.0f/s: %.2f×; machine CPU %.1f µs against %.1f µs: %.2f×",
		refuse.Throughput, doors.Throughput, refuse.Throughput/doors.Throughput, cr, cd, cr/cd)
}

// reportSoldOut adds the issue 21 targets: a sold-out refusal against a
// no-op request of the same run.
func (t *benchTarget) reportSoldOut(r *bench.Report) {
	refuse, floor := r.Result(httpSoldOut), r.Result(HTTPFloor)
	wr, wf := t.redisWork[httpSoldOut], t.redisWork[HTTPFloor]
	if refuse == nil || floor == nil || wr == nil || wf == nil || refuse.Requests == 0 || floor.Requests == 0 {
		return
	}
	rate := refuse.Throughput / floor.Throughput
	r.Extra["sold-out refusals/s vs no-op requests/s"] = fmt.Sprintf("%.0f refusals/s against %.0f GET /healthz/s: %.2f× (target ≥ 0.7); p99 %.2f ms against %.2f ms",
		refuse.Throughput, floor.Throughput, rate, refuse.Latency.P99, floor.Latency.P99)
	cr, _, pr, _ := wr.perOp(refuse)
	cf, _, pf, _ := wf.perOp(floor)
	if wr.err != nil || wf.err != nil { // the embedded Redis: its work is in this process's
		cr, cf = 0, 0
	}
	cpu := (pr + cr) / (pf + cf)
	r.Extra["machine CPU per sold-out refusal vs per no-op request"] = fmt.Sprintf("%.1f µs (process %.1f + Redis %.1f) against %.1f µs (%.1f + %.1f): %.2f× (target ≤ 1.5)",
		pr+cr, pr, cr, pf+cf, pf, cf, cpu)
	r.Targets = append(r.Targets, bench.Target{
		Name:     "1. machine CPU a sold-out refusal ÷ a no-op request (GET /healthz), same run",
		Measured: fmt.Sprintf("%.1f ÷ %.1f µs = %.2f×", pr+cr, pf+cf, cpu),
		Goal:     "≤ 1.5×", Met: cpu <= 1.5,
	})
	if wr.err == nil {
		var calls float64
		for _, v := range wr.stats.cmds {
			calls += v[0]
		}
		per := calls / float64(refuse.Requests)
		r.Extra["Redis commands per sold-out refusal"] = fmt.Sprintf("%.4f (INFO commandstats over the turns, background work included; target ≤ 0.01)", per)
		r.Targets = append(r.Targets, bench.Target{
			Name:     "1. Redis commands a sold-out refusal (INFO commandstats, background work included)",
			Measured: fmt.Sprintf("%.4f", per), Goal: "≤ 0.01", Met: per <= 0.01,
		})
	}
	r.Targets = append(r.Targets, bench.Target{
		Name:     "2. sold-out refusals/s ÷ no-op requests/s, same run",
		Measured: fmt.Sprintf("%.0f ÷ %.0f = %.2f×", refuse.Throughput, floor.Throughput, rate),
		Goal:     "≥ 0.7×", Met: rate >= 0.7,
	})
}
