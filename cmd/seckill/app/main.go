// Package app is the seckill process: its configuration (Config), and Main,
// which wires config → Redis → the durable store → Asynq → Fiber for one
// process of a mode (serve: web, worker and scheduler; or web or worker
// apart). The command (cmd/seckill) runs it; testrig starts it for tests.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/seckill/seckill/cmd/seckill/naive"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/demo"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
	"github.com/seckill/seckill/db/switches"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// Modes of the binary.
const (
	ModeServe  = "serve"
	ModeWeb    = "web"
	ModeWorker = "worker"
)

// Main wires config → Redis → the durable store (SQLite, or PostgreSQL) →
// Asynq → Fiber for one process, with no global state: end-to-end tests
// start it on :0 with a temp database.
type Main struct {
	Config Config
	Mode   string
	Log    *slog.Logger

	Redis    *rdb.Redis
	SQL      *sqldb.DB
	Backend  *backend.Backend // what every service runs on
	Inbox    *inbox.Service
	Accounts *account.Service
	Audit    *audit.Service
	// Switches are the steering switches of a running sale, reloaded by
	// every process (web and worker) into memory.
	Switches  *switches.Service
	Tokens    *account.Tokens
	Registry  *prometheus.Registry
	Client    *asynq.Client
	Inspector *asynq.Inspector
	Worker    *asynq.Server
	Scheduler *asynq.Scheduler
	Web       *web.Server
	// Site are the platform's handlers; each area builds its own beside them.
	Site    *handlers.Site
	Flusher *backend.Flusher // the one batch flush; each area registers its step
	// Areas are the promotions (areas.go), each wired the same way.
	Areas []Area

	// Revocations are the ended sessions; web processes follow them in memory.
	Revocations *account.Revocations

	// Naive mounts the load bench's naive baseline grab (one transaction of the durable store).
	Naive bool
	// PingInterval overrides the live hub's keepalive interval (tests shorten it).
	PingInterval time.Duration
	// SocketReadWindow overrides how long a started WebSocket message may take to arrive (tests shorten it).
	SocketReadWindow time.Duration
	// BcryptCost overrides the password hashing cost (tests lower it).
	BcryptCost int
	// Now is the clock the services judge sale windows and deadlines by
	// (nil: the wall clock), set by Redis's when the host's is off
	// (rdb.Clock); tests move it instead of waiting.
	Now func() time.Time
	// SystemClock is the host's clock, compared with Redis's (nil: the
	// wall clock); a test sets it off to play a host whose clock is wrong.
	SystemClock func() time.Time
	// Clock is Now set by Redis's clock.
	Clock *rdb.Clock
	// AdminPassword is the bootstrap admin's password when it was generated
	// (kept beside the database), so Announce may print it; a configured one is never printed.
	AdminPassword string
	// MaxConnsPerIP and MaxAnonSocketsPerIP cap the connections and the
	// anonymous WebSocket connections of one client address (0: no cap).
	MaxConnsPerIP       int
	MaxAnonSocketsPerIP int

	secret   []byte // the session secret, from which the areas' keys are derived
	listener net.Listener
	served   chan error
	closed   bool

	// loops are the process's background loops in the order Open started
	// them (start); Close stops them the last started first, each drained
	// before the next (lifecycle.Loops).
	loops lifecycle.Loops
}

// start starts the loops and keeps them for Close. Every background loop of
// the process is started here, in this order, and nowhere else:
//
//   - the embedded Redis's clock (rdb.Redis.Loop), then the pipeliner's
//     replica watcher and lanes (rdb.Pipeliner.Loops: stopped after every
//     loop that sends through them), live events' publisher, the Redis
//     clock's readings and the steering switches' reload (every mode);
//   - a worker's batch flush, then Asynq's worker and scheduler (stopped
//     before the last flush, which moves what their tasks left in Redis);
//   - a web process's session revocations and accounts' language picks,
//     the web server's loops (web.Server.Loops: the live hub's poller,
//     writers, readers, keepalive, session checks and receiver, then the
//     rate limits' heartbeat), then each area's loops (goods: the catalog
//     poll, the refusal memo, the phantom watch; fair sales: the waiting
//     rooms and the proof-of-work floor).
//
// The web server's Shutdown, first at Close, stops its own loops (the live
// hub's once its sockets are closed) before the others stop.
func (m *Main) start(ls ...*lifecycle.Loop) {
	for _, l := range ls {
		m.loops = append(m.loops, l)
		l.Start()
	}
}

// Loops are the background loops Open started, in the order it started
// them (start): tests check that none runs that Main did not start.
func (m *Main) Loops() lifecycle.Loops { return m.loops }

// NewMain returns an unopened process of the given mode.
func NewMain(cfg Config, mode string) *Main {
	return &Main{
		Config: cfg,
		Mode:   mode,
		Log:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),

		MaxConnsPerIP:       web.DefaultMaxConnsPerIP,
		MaxAnonSocketsPerIP: web.DefaultMaxAnonSocketsPerIP,
	}
}

// DiscardLogger writes nowhere: for a process whose log nobody reads (a
// command's own process, a quiet test).
func DiscardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (m *Main) runsWeb() bool    { return m.Mode != ModeWorker }
func (m *Main) runsWorker() bool { return m.Mode != ModeWeb }

// Open builds every part and starts serving; Close undoes it.
func (m *Main) Open(ctx context.Context) error {
	var err error
	if m.Redis, err = rdb.Open(ctx, m.Config.RedisURL); err != nil {
		return err
	}
	m.start(m.Redis.Loop())
	if m.Redis.Embedded {
		m.Log.Warn("REDIS_URL is unset: using an embedded in-memory Redis, for trying seckill out; data in it is lost at exit")
	}
	if m.SQL, err = sqldb.Open(ctx, m.Config.DatabaseURL, m.Config.DBPath); err != nil {
		return err
	}
	if m.secret, err = m.sessionSecret(); err != nil {
		return err
	}
	m.Tokens = account.NewTokens(m.secret, 7*24*time.Hour)

	// The inspector gets its own connection pool to the same Redis (or
	// Redis Cluster), so its shutdown closes only what it owns. Enqueues
	// share the grabs' pipeliner.
	connOpt := m.Redis.AsynqConnOpt()
	m.Inspector = asynq.NewInspector(connOpt)
	m.Backend = backend.New(m.SQL, m.Redis.Client)
	// The pipeliner carries the scripts a shopper is answered by and Asynq's
	// enqueues: its loops start before, so stop after, every loop that sends
	// through it, each drained first.
	m.Backend.Pipe = rdb.NewPipeliner(m.Redis.Client, 4)
	m.Backend.Pipe.SetWait(m.Config.WaitReplicas(), m.Config.RedisWaitTimeout)
	m.start(m.Backend.Pipe.Loops()...)
	m.start(m.Backend.Events.Publisher()) // drained at Close
	local, system := m.Now, m.SystemClock
	if system == nil {
		system = time.Now
	}
	if local == nil {
		local = system
	}
	m.Clock = rdb.NewClock(ctx, m.Redis, local, system)
	m.start(m.Clock.Loop())
	if d := m.Clock.Skew(); d != 0 {
		m.Log.Warn("this host's clock differs from Redis's; sale windows and deadlines follow Redis's", "difference", d)
	}
	m.Backend.Now = m.Clock.Now
	m.Client = asynq.NewClientFromRedisClient(m.Backend.Pipe.Client())
	m.Backend.Tasks, m.Backend.Queue, m.Backend.Log = m.Client, m.Inspector, m.Log
	m.Revocations = account.NewRevocations(m.Redis.Client, 7*24*time.Hour)
	m.Revocations.Log = m.Log
	m.Accounts = account.New(m.Backend)
	m.Tokens.Revocations, m.Accounts.Revocations = m.Revocations, m.Revocations
	m.Accounts.WebhookAllowPrivate, m.Accounts.BcryptCost = m.Config.WebhookAllowPrivate, m.BcryptCost
	m.Audit = audit.New(m.Backend)
	m.Inbox = &inbox.Service{Backend: m.Backend}
	// The steering switches, in force before anything serves: read now,
	// then every switches.ReloadEvery; the live events' push interval follows them.
	m.Switches = switches.New(m.Backend)
	if err := m.Switches.Load(ctx); err != nil {
		return err
	}
	m.Switches.OnChange(func(sw model.Switches) {
		m.Backend.Events.SetWindow(time.Duration(sw.StockPushMS) * time.Millisecond)
	})
	m.start(lifecycle.New("switches", m.Switches.Run))
	m.Site = &handlers.Site{Accounts: m.Accounts, Audit: m.Audit, Inbox: m.Inbox, Tokens: m.Tokens,
		TokenTTL: 7 * 24 * time.Hour, MonitorPath: web.MonitorPath, Switches: m.Switches, Now: m.Backend.Now, Log: m.Log}
	m.Flusher = backend.NewFlusher(m.Backend, m.Config.FlushInterval)
	m.Areas = m.areas()
	m.wireAreas()

	m.Registry = prometheus.NewRegistry()
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	taskMetrics := tasks.NewMetrics(m.Registry)
	tasks.RegisterFlushMetrics(m.Registry, m.Backend.Flushes)
	web.RegisterStoreMetrics(m.Registry, m.Redis.Client, web.StoreCounts{
		Phantoms: AreaService[*goods.Service](m, "goods").PhantomsFound, WaitsShort: m.Backend.Pipe.WaitsShort, NotReplicated: m.Backend.Pipe.NotReplicated,
		SQLStatements: m.SQL.Statements})
	m.registerOpsMetrics()

	if err := m.bootstrapAdmin(ctx); err != nil {
		return err
	}
	if m.Config.Demo {
		if err := m.seedDemo(ctx); err != nil {
			return err
		}
	}

	if m.runsWorker() {
		areas := m.areaTasks()
		m.Worker = asynq.NewServer(connOpt, asynq.Config{
			Concurrency:              20,
			Queues:                   map[string]int{tasks.QueueCritical: 6, tasks.QueueDefault: 3, tasks.QueueLow: 1},
			DelayedTaskCheckInterval: time.Second,
			ShutdownTimeout:          8 * time.Second,
			LogLevel:                 asynq.WarnLevel,
			// Reminders held by a steering switch wait without spending retries.
			IsFailure:      tasks.IsFailure,
			RetryDelayFunc: tasks.RetryDelay,
		})
		mux := tasks.NewServeMux(m.Log, taskMetrics, areas...)
		mux.Use(tasks.Hold(func() bool { return m.Switches.Current().RemindersPaused }, tasks.ReminderTypes...))
		m.start(m.Flusher.Loop())
		if err := m.Worker.Start(mux); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		m.start(lifecycle.Until("asynq worker", m.Worker.Shutdown))
		m.Scheduler = asynq.NewScheduler(connOpt, &asynq.SchedulerOpts{Location: time.UTC, LogLevel: asynq.WarnLevel})
		for _, p := range tasks.PeriodicOf(areas...) {
			if _, err := m.Scheduler.Register(p.Spec, p.Task, p.Opts...); err != nil {
				return fmt.Errorf("schedule %s: %w", p.Task.Type(), err)
			}
		}
		if err := m.Scheduler.Start(); err != nil {
			return fmt.Errorf("start scheduler: %w", err)
		}
		m.start(lifecycle.Until("asynq scheduler", m.Scheduler.Shutdown))
	}

	if m.runsWeb() {
		wcfg := web.Config{
			Redis: m.Redis.Client, Site: m.Site, Areas: m.areaRoutes(), Audit: m.Audit, Tokens: m.Tokens, Log: m.Log, Registry: m.Registry,
			Monitor: asynqmon.New(asynqmon.Options{RootPath: web.MonitorPath, RedisConnOpt: connOpt}),
			Ready:   m.ready, PingInterval: m.PingInterval, SocketReadWindow: m.SocketReadWindow,
			MetricsToken:  m.Config.MetricsToken,
			Limits:        web.Limits{Grab: m.Config.RateGrab, Auth: m.Config.RateAuth, IP: m.Config.RateIP},
			MaxConnsPerIP: m.MaxConnsPerIP, MaxAnonSocketsPerIP: m.MaxAnonSocketsPerIP,
			Switches: m.Switches.Current,
			Observe:  m.observeLive(),
		}
		wcfg.TrustedProxies, _ = ParseTrustedProxies(m.Config.TrustedProxies) // validated by ParseConfig
		if m.Naive {
			wcfg.BenchRoutes = (&naive.Baseline{SQL: m.SQL}).Routes
		}
		if err := m.Revocations.Open(ctx); err != nil {
			return fmt.Errorf("follow revocations: %w", err)
		}
		m.start(m.Revocations.Loop())
		m.Accounts.Locales = account.NewLocales(m.Redis.Client, m.SQL.R)
		m.Accounts.Locales.Log = m.Log
		if err := m.Accounts.Locales.Open(ctx); err != nil {
			return fmt.Errorf("follow language picks: %w", err)
		}
		m.start(m.Accounts.Locales.Loop())
		m.Web = web.New(wcfg)
		m.Switches.OnChange(m.Web.SwitchesChanged)
		if err := m.Web.Start(ctx); err != nil {
			return fmt.Errorf("subscribe to live events: %w", err)
		}
		m.start(m.Web.Loops()...)
		if err := m.serveAreas(ctx); err != nil {
			return err
		}
		if m.listener, err = net.Listen("tcp", m.Config.Addr); err != nil {
			return err
		}
		m.served = make(chan error, 1)
		go func() { m.served <- m.Web.Listen(m.listener) }()
	}
	return nil
}

// ready checks whether Redis and the database answer, each on its own and
// at once: one that is slow to fail does not spend the other's time.
func (m *Main) ready(ctx context.Context) map[string]error {
	redisErr := make(chan error, 1)
	go func() { redisErr <- m.Redis.Client.Ping(ctx).Err() }()
	dbErr := m.SQL.Ping(ctx)
	return map[string]error{"redis": <-redisErr, "database": dbErr}
}

// URL is the base address the web server listens on.
func (m *Main) URL() string {
	if m.listener == nil {
		return ""
	}
	addr := m.listener.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "localhost"
	}
	return fmt.Sprintf("http://%s", net.JoinHostPort(host, fmt.Sprint(addr.Port)))
}

// Announce prints where to go and how to log in.
func (m *Main) Announce() {
	redisMode := "Redis at " + m.Config.RedisURL
	if m.Redis.Cluster {
		redisMode = "Redis Cluster at " + m.Config.RedisURL
	}
	if m.Redis.Embedded {
		redisMode = "embedded in-memory Redis"
	}
	fmt.Printf("\nseckill %s running (%s, %s)\n", m.Mode, redisMode, m.SQL)
	if m.runsWeb() {
		u := m.URL()
		fmt.Printf("  shop:       %s/\n  merchant:   %s/admin\n  monitor:    %s%s\n  metrics:    %s/metrics (Prometheus: signed in as admin, or Bearer METRICS_TOKEN)\n", u, u, u, web.MonitorPath, u)
		fmt.Println("  sign in as (username / password):")
		if m.AdminPassword != "" {
			fmt.Printf("    admin      %s / %s\n", m.Config.AdminUsername, m.AdminPassword)
		} else {
			fmt.Printf("    admin      %s / the configured ADMIN_PASSWORD\n", m.Config.AdminUsername)
		}
		if m.Config.Demo {
			fmt.Printf("    merchant   %s / %s\n", demo.Merchant, demo.MerchantPassword)
			fmt.Printf("    shopper    %s / %s\n", demo.Shopper, demo.ShopperPassword)
		} else {
			fmt.Println("    (no demo accounts: start with DEMO=true for a demo merchant and shopper)")
		}
	}
	fmt.Println()
}

// Close stops in order: stop accepting and drain HTTP, stop the loops the
// last started first (start: the areas', Asynq, the last flush, the
// publisher), close the stores. A second Close does nothing.
func (m *Main) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	var errs []error
	if m.Web != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, m.Web.Shutdown(ctx))
		cancel()
		if m.served != nil {
			// fasthttp's Shutdown closes only the listeners Serve has
			// registered; one closed right after Open may not be yet, and
			// its Serve would accept forever. Closing it here ends either.
			m.listener.Close()
			<-m.served
		}
	}
	m.loops.Stop() // in the order start states: the areas' first, the publisher last
	if m.Revocations != nil {
		m.Revocations.Close()
	}
	if m.Accounts != nil && m.Accounts.Locales != nil {
		m.Accounts.Locales.Close()
	}
	if m.Inspector != nil {
		errs = append(errs, m.Inspector.Close())
	}
	if m.Backend != nil {
		m.Backend.Events.Close()
		if m.Backend.Pipe != nil {
			m.Backend.Pipe.Close() // after the last enqueue: it carries Client's commands
		}
	}
	if m.SQL != nil {
		errs = append(errs, m.SQL.Close())
	}
	if m.Redis != nil {
		errs = append(errs, m.Redis.Close())
	}
	return errors.Join(errs...)
}

// sessionSecret is SESSION_SECRET, or one generated once and kept beside the database.
func (m *Main) sessionSecret() ([]byte, error) {
	if m.Config.SessionSecret != "" {
		return []byte(m.Config.SessionSecret), nil
	}
	s, err := keptSecret(filepath.Join(filepath.Dir(m.Config.DBPath), "session.secret"), 32)
	return []byte(s), err
}

// bootstrapAdmin creates or resets the admin account from the configuration.
func (m *Main) bootstrapAdmin(ctx context.Context) error {
	pw := m.Config.AdminPassword
	if pw == "" {
		var err error
		if pw, err = keptSecret(filepath.Join(filepath.Dir(m.Config.DBPath), "admin.password"), 9); err != nil {
			return err
		}
	}
	if _, err := m.Accounts.EnsureUser(ctx, m.Config.AdminUsername, pw, model.RoleAdmin); err != nil {
		return fmt.Errorf("bootstrap admin: %w", err)
	}
	if m.Config.AdminPassword == "" {
		m.AdminPassword = pw
	}
	return nil
}

// keptSecret reads a secret from path, or generates n random bytes (hex) and writes them there.
func keptSecret(path string, n int) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, n)
	rand.Read(buf)
	s := hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keep secret in %s: %w", path, err)
	}
	return s, nil
}

// FlushAll moves every promotion's pending records to the durable store
// now and returns when they are in it, waiting for a lane the interval
// flush holds (Flusher.Drain): resend-orders reads the store right after,
// and tests call it instead of waiting for the interval.
func (m *Main) FlushAll(ctx context.Context) error {
	return m.Flusher.Drain(ctx)
}

// observeLive is what sees every live event of a web process before its
// sockets do: the goods' catalog and the front page's cards, which keep the
// shoppers' reads in memory current with them.
func (m *Main) observeLive() func(topic string, event []byte) {
	gs := AreaService[*goods.Service](m, "goods")
	return func(topic string, event []byte) {
		if gs != nil {
			gs.Catalog().Observe(topic, event)
		}
		m.Site.Observe(topic, event)
	}
}
