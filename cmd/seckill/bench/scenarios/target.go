package scenarios

// The target: the server under load, started in-process through the
// Opener package main gives the bench, or a running one (-url).

import (
	"context"
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
