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
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/cmd/seckill/naive"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
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
	fs.StringVar(&o.Scenarios, "scenarios", "all", "comma list: goods,wins,wins-nowait,limits-off,attack,redis,redis-wins,floor,naive,redpacket,coupon,hot1,hot3,hot1-soldout,hot3-soldout,soldout,queue-join,idle-ws,crowd or all, and fair (only when named)")
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
	fs.StringVar(&o.Trace, "trace", "", "write a runtime execution trace of the whole run (go tool trace: where requests wait)")
	fs.StringVar(&o.Target, "target", "", "with -rehearsal: the base URL of the running deployment to rehearse on (public API only)")
	fs.BoolVar(&o.Rehearsal, "rehearsal", false, "rehearse a sale on -target: a rehearsal slot, shoppers and goods, a grab load, the invariants, then DELETE of it all (modest sizes unless -users, -c, -n, -stock say)")
	fs.StringVar(&o.AdminUser, "admin", "admin", "with -rehearsal: the admin's username (the bootstrap admin's by default)")
	fs.StringVar(&o.AdminPassword, "admin-password", os.Getenv("ADMIN_PASSWORD"), "with -rehearsal: the admin's password; default $ADMIN_PASSWORD")
	fs.IntVar(&o.RehearsalLimit, "limit", 2, "with -rehearsal: each shopper's limit on the rehearsal goods")
	if err := fs.Parse(args); err != nil {
		return nil, err
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

// benchTarget is the server under load and what the bench may do to it.
type benchTarget struct {
	URL       string
	Backend   *backend.Backend
	Accounts  *account.Service
	Goods     *goods.Service // nil against a remote server
	Fair      *fair.Service  // nil against a remote server
	Tokens    *account.Tokens
	Users     []*model.User
	tokens    []string
	addrs     []string // the shoppers' client addresses (X-Forwarded-For)
	admin     string   // a token of the bootstrap admin
	naive     *naive.Baseline
	client    *http.Client          // metrics
	load      *bench.Client         // one connection per worker of the load, and one for set-up calls
	unlimited *bench.Client         // the load's connections to a twin web process with every limit off (in-process only)
	noWait    *bench.Client         // the load's connections to a twin that acknowledges without WAIT (only when the Redis has replicas)
	setupConn int                   // load's connection for set-up calls
	redisWork map[string]*redisWork // Redis work measured around the turns, by scenario (see measureRedis)
	embedded  bool                  // the in-process server runs on the embedded Redis (no INFO sections to read)
	joinBytes float64               // Redis memory a waiting shopper, measured by the queue-join scenario (0: not measured)
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
		loads[i] = bench.Load{Name: sc.name, Concurrency: o.Conc, Requests: int64(o.Requests), Rate: o.Rate, Progress: o.Progress, Turn: sc.turn}
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
	// Issue 21: refusals of a sold-out item, against the floor above.
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

// Settings are what the bench asks of the in-process server it loads.
type Settings struct {
	DBPath         string        // SQLite file (in the bench's temp folder) when DatabaseURL is empty
	DatabaseURL    string        // PostgreSQL (empty: SQLite at DBPath)
	RedisURL       string        // empty: the embedded Redis
	WaitTimeout    time.Duration // REDIS_WAIT_TIMEOUT (0: the server's default)
	SessionSecret  string        // the bench signs its shoppers' tokens with it
	AdminPassword  string        // the bootstrap admin's
	TrustedProxies string        // the load comes through loopback as a proxy would, forwarding each shopper's address
}

// Server is an in-process server started for the bench, on a free loopback
// port, with the naive baseline's routes mounted (cmd/seckill/naive).
type Server struct {
	URL      string
	Backend  *backend.Backend
	Accounts *account.Service
	Tokens   *account.Tokens
	Goods    *goods.Service
	Fair     *fair.Service
	SQL      *sqldb.DB  // the durable store, for the naive baseline's grab
	Redis    *rdb.Redis // Embedded says whether it is the embedded one
	// Twin starts a web process on the same Redis and database that differs
	// from the server as twin says; it returns its URL and a func closing it.
	Twin  func(ctx context.Context, twin Twin) (url string, closeTwin func(), err error)
	Close func() // closes the server (its twins are closed by the func Twin returned)
}

// Twin is how a twin web process differs from the server it shares Redis and the database with.
type Twin struct {
	NoLimits bool // every abuse limit off: the limits' cost is measured against it
	NoWait   bool // acknowledges without waiting for Redis replicas (REDIS_WAIT_REPLICAS=0)
}

// Opener starts the in-process server the bench loads (package main's, as
// `seckill serve` would run it) from the bench's settings.
type Opener func(ctx context.Context, s Settings) (*Server, error)

func openBenchTarget(ctx context.Context, o *Options, open Opener) (*benchTarget, func(), error) {
	t := &benchTarget{
		client: &http.Client{Timeout: 30 * time.Second},
	}
	closers := []func(){}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if o.URL == "" {
		if open == nil {
			return nil, nil, fmt.Errorf("bench: no in-process server to start: give -url")
		}
		dir, err := os.MkdirTemp("", "seckill-bench-")
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { os.RemoveAll(dir) })
		if err := emptyRedis(ctx, o); err != nil {
			closeAll()
			return nil, nil, err
		}
		srv, err := open(ctx, Settings{
			DBPath: filepath.Join(dir, "bench.db"), DatabaseURL: o.DatabaseURL, RedisURL: o.RedisURL, WaitTimeout: o.WaitTimeout,
			SessionSecret: "bench-session-secret-0123456789", AdminPassword: "bench-admin-password",
			// The load comes through loopback as a proxy would, forwarding each
			// shopper's own address; the abuse limits stay at their defaults.
			TrustedProxies: "127.0.0.1/32,::1/128",
		})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, srv.Close)
		t.URL, t.Backend, t.Accounts, t.Tokens = srv.URL, srv.Backend, srv.Accounts, srv.Tokens
		t.Goods, t.Fair, t.embedded = srv.Goods, srv.Fair, srv.Redis.Embedded
		// A twin web process on the same Redis and database with every
		// abuse limit off: the limits' cost is measured against it.
		twin := func(what string, tw Twin) (*bench.Client, error) {
			url, closeTwin, err := srv.Twin(ctx, tw)
			if err != nil {
				return nil, fmt.Errorf("twin %s: %w", what, err)
			}
			closers = append(closers, closeTwin)
			client, err := bench.NewClient(url, o.Conc)
			if err == nil {
				closers = append(closers, client.Close)
			}
			return client, err
		}
		if t.unlimited, err = twin("without limits", Twin{NoLimits: true}); err != nil {
			closeAll()
			return nil, nil, err
		}
		// Where the masters have replicas the server waits for them (WAIT):
		// a twin that does not (REDIS_WAIT_REPLICAS=0) measures that cost.
		if rdb.HasReplicas(ctx, srv.Redis.Client) {
			if t.noWait, err = twin("without WAIT", Twin{NoWait: true}); err != nil {
				closeAll()
				return nil, nil, err
			}
		}
		t.naive = &naive.Baseline{SQL: srv.SQL}
		o.redisLabel = "in-process server, embedded Redis"
		if !srv.Redis.Embedded {
			o.redisLabel = "in-process server, real Redis at " + o.RedisURL
		}
	} else {
		if (o.DBPath == "" && o.DatabaseURL == "") || o.Secret == "" {
			return nil, nil, fmt.Errorf("bench: with -url, give -db-path (or -database-url) and -session-secret of that server to seed users")
		}
		sq, err := sqldb.Open(ctx, o.DatabaseURL, o.DBPath)
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { sq.Close() })
		t.URL, t.Backend, t.Tokens = strings.TrimRight(o.URL, "/"), backend.New(sq, nil), account.NewTokens([]byte(o.Secret), 24*time.Hour)
		t.Accounts = account.New(t.Backend)
		o.redisLabel = "remote server"
	}
	users, err := t.Accounts.SeedUsers(ctx, fmt.Sprintf("bench%d_", time.Now().Unix()%100000), "bench-password", o.Users)
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("seed users: %w", err)
	}
	t.Users = users
	for k, u := range users {
		t.tokens = append(t.tokens, t.Tokens.Sign(u))
		t.addrs = append(t.addrs, shopperAddr(k))
	}
	t.setupConn = o.Conc
	if t.load, err = bench.NewClient(t.URL, o.Conc+1); err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, t.load.Close)
	// Open the load's connections before measuring, so no scenario pays for TCP set-up.
	bench.Run(ctx, bench.Load{Name: "warm-up", Concurrency: o.Conc, Requests: int64(4 * o.Conc)},
		func(ctx context.Context, w int, _ int64) string { return t.healthz(w) })
	if t.unlimited != nil {
		bench.Run(ctx, bench.Load{Name: "warm-up twin", Concurrency: o.Conc, Requests: int64(4 * o.Conc)},
			func(ctx context.Context, w int, _ int64) string {
				t.unlimited.Do(w, "GET", "/healthz", "", nil)
				return "ok"
			})
	}
	admin, err := t.Accounts.User(ctx, 1)
	if err == nil {
		t.admin = t.Tokens.Sign(admin)
	}
	return t, closeAll, nil
}

// emptyRedis makes sure the in-process server starts on an empty Redis
// database: its fresh SQLite would otherwise meet another run's keys.
func emptyRedis(ctx context.Context, o *Options) error {
	if o.RedisURL == "" {
		return nil
	}
	r, err := rdb.Open(ctx, o.RedisURL)
	if err != nil {
		return err
	}
	defer r.Close()
	if o.FlushRedis {
		return rdb.FlushDB(ctx, r.Client)
	}
	if n, err := rdb.DBSize(ctx, r.Client); err != nil {
		return err
	} else if n > 0 {
		return fmt.Errorf("bench: the Redis at %s holds %d keys; point REDIS_URL at an empty database (redis://host:6379/15) or add -flush-redis to empty it", o.RedisURL, n)
	}
	return nil
}

var memSeries = regexp.MustCompile(`(?m)^go_memstats_(heap_inuse|stack_inuse)_bytes ([0-9.e+]+)$`)

// serverMemory reads the server's heap and stack in use from its /metrics,
// after a collection when the server runs in this process.
func serverMemory(t *benchTarget) (float64, error) {
	if t.naive != nil {
		runtime.GC()
	}
	req, _ := http.NewRequest("GET", t.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+t.admin)
	res, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	total := 0.0
	for _, m := range memSeries.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		total += v
	}
	return total, nil
}
