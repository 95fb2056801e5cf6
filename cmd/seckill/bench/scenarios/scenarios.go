// Package scenarios is the load bench of `seckill bench`: its options
// (flags), its scenarios (each prepares its fixture and returns its request
// and its checks), the target they load, the fair-sale and crowd benches,
// and the rehearsal on a running deployment.
//
// It is a package of its own, beside the load runner in its parent
// cmd/seckill/bench, because the two know different things: the runner
// drives any Op and reports (closed and open loops, histograms, charts) and
// knows nothing of seckill, while the scenarios know its API, its services
// and its invariants (db/goods, db/fair, Redis). Keeping them apart keeps the
// runner small and free of the app; keeping the scenarios out of package
// main keeps cmd/seckill a thin main.
//
// The bench never imports package main: to load an in-process server it is
// handed an Opener (cmd/seckill's openBenchServer), which starts one from
// the bench's Settings and returns the Server (its URL, backend, services,
// Redis, and a way to start twin web processes).
package scenarios

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// Options are the knobs of `seckill bench`.
type Options struct {
	URL         string // a running server; empty starts one in-process
	DBPath      string // the running server's SQLite file, to seed users (remote mode)
	DatabaseURL string // the durable store: of the in-process server (else SQLite in a temp folder), or of the -url server
	Secret      string // the running server's SESSION_SECRET, to mint tokens (remote mode)
	Users       int
	Conc        int
	Stock       int
	Requests    int
	Rate        float64
	Watchers    int
	IdleWS      int
	Out         string
	Scenarios   string
	Rounds      int
	Smoke       bool
	CPUProfile  string
	TurnProfile string // a folder for each scenario's timed turns' CPU profiles (bench.Load.ProfileDir)
	Trace       string
	RedisURL    string        // in-process target's Redis: REDIS_URL, else embedded
	WaitTimeout time.Duration // in-process target's REDIS_WAIT_TIMEOUT
	FlushRedis  bool
	Fair        FairConfig  // the fair sale (-scenarios fair)
	Crowd       CrowdConfig // the crowd's reads at sale time (-scenarios crowd)
	Progress    io.Writer
	redisLabel  string
	// A rehearsal on a running deployment (-target URL -rehearsal), through
	// its public API as the admin (rehearsal.go).
	Target         string
	Rehearsal      bool
	AdminUser      string
	AdminPassword  string
	RehearsalLimit int
}

func (o *Options) wants(name string) bool {
	for _, s := range strings.Split(o.Scenarios, ",") {
		if strings.TrimSpace(s) == name || (s == "all" && !namedOnly[name]) {
			return true
		}
	}
	return false
}

// namedOnly are the scenarios "all" leaves out: they run only when named.
var namedOnly = map[string]bool{"fair": true}

func ParseOptions(args []string) (*Options, error) {
	o := &Options{Progress: os.Stderr, RedisURL: os.Getenv("REDIS_URL"), DatabaseURL: os.Getenv("DATABASE_URL")}
	fs := flag.NewFlagSet("seckill bench", flag.ContinueOnError)
	fs.StringVar(&o.URL, "url", "", "server to load; empty starts one in-process (real Redis from REDIS_URL, else embedded)")
	fs.StringVar(&o.DBPath, "db-path", "", "the server's DB_PATH, to seed users (with -url, on SQLite)")
	fs.StringVar(&o.DatabaseURL, "database-url", o.DatabaseURL, "PostgreSQL of the in-process server (unset: SQLite in a temp folder), or of the -url server to seed users; default $DATABASE_URL")
	fs.StringVar(&o.Secret, "session-secret", "", "the server's SESSION_SECRET, to mint tokens (with -url)")
	o.Fair = defaultFairConfig()
	o.Crowd = defaultCrowdConfig()
	o.Crowd.flags(fs)
	fs.IntVar(&o.Users, "users", 2000, "distinct shoppers")
	fs.IntVar(&o.Conc, "c", 200, "concurrent connections (closed loop)")
	fs.IntVar(&o.Stock, "stock", 1000, "stock of the goods, shares of the red packet, stock of the coupon")
	fs.IntVar(&o.Requests, "n", 20000, "requests per scenario")
	fs.Float64Var(&o.Rate, "rate", 0, "open loop: requests a second (0: closed loop)")
	fs.IntVar(&o.Watchers, "ws", 100, "WebSocket clients watching the goods (event lag)")
	fs.IntVar(&o.IdleWS, "idle-ws", 5000, "idle WebSocket clients for the memory measure (0: skip)")
	fs.StringVar(&o.Out, "out", "bench-out", "folder for report.json, report.md and report.png")
	fs.StringVar(&o.Scenarios, "scenarios", "all", "comma list: goods,wins,wins-nowait,limits-off,attack,redis,redis-wins,floor,naive,redpacket,coupon,hot1,hot3,hot1-soldout,hot3-soldout,doors,soldout,queue-join,idle-ws,crowd or all, and fair (only when named)")
	fs.IntVar(&o.Fair.Humans, "fair-humans", o.Fair.Humans, "fair: human shoppers")
	fs.IntVar(&o.Fair.Bots, "fair-bots", o.Fair.Bots, "fair: bots in the fleet")
	fs.IntVar(&o.Fair.Accounts, "fair-accounts", o.Fair.Accounts, "fair: accounts per bot")
	fs.IntVar(&o.Fair.Stock, "fair-stock", o.Fair.Stock, "fair: units of each sale")
	fs.IntVar(&o.Fair.ModePow, "fair-mode-pow", o.Fair.ModePow, "fair: pow_bits of the mode sales (0: none)")
	fs.IntVar(&o.Fair.PowBits, "fair-pow-bits", o.Fair.PowBits, "fair: pow_bits of the fleet's proof-of-work phase")
	fs.DurationVar(&o.Fair.PowFor, "fair-pow-for", o.Fair.PowFor, "fair: length of each proof-of-work phase")
	fs.IntVar(&o.Rounds, "rounds", 5, "run the scenarios in turns, each with n/rounds requests a turn, so a noisy machine slows them alike")
	fs.DurationVar(&o.WaitTimeout, "redis-wait-timeout", 0, "the in-process server's REDIS_WAIT_TIMEOUT (0: its default)")
	fs.BoolVar(&o.Smoke, "smoke", false, "tiny run that checks the invariants (used by make test)")
	fs.BoolVar(&o.FlushRedis, "flush-redis", false, "empty the REDIS_URL database first (the in-process bench needs an empty one)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run (server included when in-process)")
	fs.StringVar(&o.TurnProfile, "turnprofiles", "", "write a CPU profile of each scenario's timed turns alone into this folder, <scenario>-<round>.pprof (not with -cpuprofile)")
	fs.StringVar(&o.Trace, "trace", "", "write a runtime execution trace of the whole run (go tool trace: where requests wait)")
	fs.StringVar(&o.Target, "target", "", "with -rehearsal: the base URL of the running deployment to rehearse on (public API only)")
	fs.BoolVar(&o.Rehearsal, "rehearsal", false, "rehearse a sale on -target: a rehearsal slot, shoppers and goods, a grab load, the invariants, then DELETE of it all (modest sizes unless -users, -c, -n, -stock say)")
	fs.StringVar(&o.AdminUser, "admin", "admin", "with -rehearsal: the admin's username (the bootstrap admin's by default)")
	fs.StringVar(&o.AdminPassword, "admin-password", os.Getenv("ADMIN_PASSWORD"), "with -rehearsal: the admin's password; default $ADMIN_PASSWORD")
	fs.IntVar(&o.RehearsalLimit, "limit", 2, "with -rehearsal: each shopper's limit on the rehearsal goods")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.CPUProfile != "" && o.TurnProfile != "" {
		return nil, fmt.Errorf("bench: -cpuprofile and -turnprofiles both profile the CPU: give one")
	}
	if o.Rehearsal {
		if o.Target == "" {
			return nil, fmt.Errorf("bench: -rehearsal needs -target, the deployment's base URL")
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range rehearsalDefaults {
			if !set[name] {
				fs.Set(name, strconv.Itoa(v))
			}
		}
		if o.RehearsalLimit < 1 {
			return nil, fmt.Errorf("bench: -limit must be positive")
		}
	}
	if o.Smoke {
		o.Fair = smokeFairConfig()
		o.Crowd = smokeCrowdConfig()
		o.Users, o.Conc, o.Stock, o.Requests, o.Watchers, o.IdleWS, o.Rounds = 60, 8, 20, 120, 2, 50, 2
	}
	if o.Users < 1 || o.Conc < 1 || o.Stock < 1 || o.Requests < 1 || o.Rounds < 1 || o.Watchers < 0 || o.IdleWS < 0 {
		return nil, fmt.Errorf("bench: -users, -c, -stock, -n and -rounds must be positive")
	}
	if err := o.Crowd.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// Run starts or reaches the target, runs the chosen scenarios and checks
// the invariants. open starts the in-process server when o.URL is empty (it
// may be nil for a rehearsal or against -url).
func Run(ctx context.Context, o *Options, open Opener) (*bench.Report, error) {
	if o.Rehearsal {
		return benchRehearsal(ctx, o)
	}
	t, closeTarget, err := openBenchTarget(ctx, o, open)
	if err != nil {
		return nil, err
	}
	defer closeTarget()
	r := &bench.Report{
		StartedAt: time.Now(), Machine: bench.Machine(), Target: t.URL + " (" + o.redisLabel + ")",
		Settings: map[string]string{
			"users": strconv.Itoa(o.Users), "c": strconv.Itoa(o.Conc), "stock": strconv.Itoa(o.Stock),
			"n": strconv.Itoa(o.Requests), "rounds": strconv.Itoa(o.Rounds), "ws": strconv.Itoa(o.Watchers), "rate": fmt.Sprint(o.Rate),
		},
		Extra: map[string]string{},
	}
	var ready []*scenario
	for _, s := range benchScenarios {
		if !o.wants(s.name) {
			continue
		}
		sc, err := s.prepare(ctx, o, t)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.name, err)
		}
		if sc != nil { // nil: not possible against this target
			ready = append(ready, sc)
		}
	}
	loads, ops := make([]bench.Load, len(ready)), make([]bench.Op, len(ready))
	for i, sc := range ready {
		loads[i] = bench.Load{Name: sc.name, Concurrency: o.Conc, Requests: int64(o.Requests), Rate: o.Rate, Progress: o.Progress, Turn: sc.turn, ProfileDir: o.TurnProfile}
		ops[i] = sc.op
	}
	results := bench.RunRounds(ctx, o.Rounds, loads, ops)
	for i, sc := range ready {
		r.Results = append(r.Results, results[i])
		if sc.finish == nil {
			continue
		}
		if err := sc.finish(ctx, results[i], r); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.name, err)
		}
	}
	if o.wants("idle-ws") {
		if err := benchIdleWebSockets(ctx, o, t, r); err != nil {
			return nil, fmt.Errorf("scenario idle-ws: %w", err)
		}
	}
	if o.wants("fair") {
		if err := benchFair(ctx, o, t, r); err != nil {
			return nil, fmt.Errorf("scenario fair: %w", err)
		}
	}
	if o.wants("crowd") {
		if err := benchCrowd(ctx, o, t, r); err != nil {
			return nil, fmt.Errorf("scenario crowd: %w", err)
		}
	}
	t.reportRedisWork(r)
	t.reportSoldOut(r)
	t.reportDoors(r)
	t.reportWinTargets(r)
	t.reportJoins(r)
	t.reportWaitCost(r)
	r.AddRatio("HTTP goods grab / Redis limit", "HTTP goods grab", "Redis limit (EVALSHA)")
	r.AddRatio("HTTP goods grab / same, limits off (the limits' cost)", "HTTP goods grab", LimitsOff)
	r.AddRatio("HTTP goods grab / naive SQLite grab", "HTTP goods grab", "naive SQLite grab")
	r.AddRatio("HTTP goods grab / HTTP floor", "HTTP goods grab", HTTPFloor)
	r.AddRatio("HTTP floor / naive SQLite grab (the most ours / naive can be)", HTTPFloor, "naive SQLite grab")
	return r, nil
}

// scenario is one load of the bench, prepared (fixtures made, watchers
// open) before any load runs: its request, and what to check once every
// round is done.
type scenario struct {
	name   string
	op     bench.Op
	turn   func(run func())                                                   // runs around each turn (may be nil)
	finish func(ctx context.Context, res bench.Result, r *bench.Report) error // adds measures and checks; may be nil
}

// benchScenarios are prepared and run in this order, in turns (see -rounds).
var benchScenarios = []struct {
	name    string
	prepare func(ctx context.Context, o *Options, t *benchTarget) (*scenario, error)
}{
	{"goods", benchGoods},
	{"limits-off", benchLimitsOff},
	{"attack", benchUnderAttack},
	{"redis", benchRedisLimit},
	{"floor", benchHTTPFloor},
	{"naive", benchNaive},
	{"redpacket", benchRedPacket},
	{"coupon", benchCoupon},
	// Last in each round: each turn leaves as many orders as it had grabs,
	// and settles their flush before the next target's turn starts.
	{"wins", benchGoodsWins},
	{"wins-nowait", benchGoodsWinsNoWait},
	{"redis-wins", benchRedisWins},
	// One hot item in one Redis bucket and in three (issue 14 target 3: run on a cluster).
	{"hot1", benchHotItem1},
	{"hot3", benchHotItem3},
	{"hot1-soldout", benchHotSoldOut1},
	{"hot3-soldout", benchHotSoldOut3},
	// Issue 21: refusals of a sold-out item, against the floor above, and
	// the same request refused past its doors alone (the engine's share).
	{"doors", benchDoors},
	{"soldout", benchSoldOut},
	// Issue 22: shoppers joining waiting rooms, against the refusals above.
	{"queue-join", benchQueueJoin},
}

// HTTPFloor names the floor scenario's result.
const HTTPFloor = "HTTP floor (GET /healthz)"

// benchHTTPFloor loads the cheapest route the server has (behind panic
// recovery only, before metrics and auth) with the same client and
// concurrency: no grab over HTTP can beat it, so it bounds what ours / naive
// can reach on this machine.
func benchHTTPFloor(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	sc := &scenario{name: HTTPFloor, op: func(ctx context.Context, w int, _ int64) string { return t.healthz(w) }}
	t.measureRedis(ctx, sc, nil)
	return sc, nil
}
