// Package web owns the Fiber application: routes, middleware, the error
// handler that maps domain codes to HTTP, static files, the live hub at /ws
// and Asynqmon at /monitor.
package web

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/web/ratelimit"
	"github.com/seckill/seckill/web/wshub"
	"github.com/valyala/fasthttp"
)

// MonitorPath is where Asynqmon is mounted.
const MonitorPath = "/monitor"

// Config is what the web server needs from the wiring.
type Config struct {
	Redis redis.UniversalClient // the rate limiters' process count and the hub's live channel
	// Site are the platform's own handlers (accounts, the audit log,
	// notifications, the pages that show several areas).
	Site *handlers.Site
	// Areas are the promotions' routes, mounted in order (see Mount).
	Areas    []AreaRoutes
	Audit    *audit.Service
	Tokens   *account.Tokens
	Log      *slog.Logger
	Registry *prometheus.Registry
	// Monitor is Asynqmon's handler, mounted at MonitorPath for admins.
	Monitor http.Handler
	// Ready checks each part the process needs ("redis", "database"): a nil
	// error means the part answers.
	Ready func(ctx context.Context) map[string]error
	// PingInterval is how often the hub pings sockets (0: 30s); one silent for two intervals is dropped.
	PingInterval time.Duration
	// SocketReadWindow is how long a WebSocket message, once started, may
	// take to arrive whole (0: 5s).
	SocketReadWindow time.Duration
	// BenchRoutes, when set, mounts the load bench's own API routes (its
	// naive SQLite baseline grab, its grab that passes the doors alone)
	// behind the API's middleware, as an area's API is mounted.
	BenchRoutes func(r Mount)
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// MetricsToken, when set, lets a Bearer of it read /metrics besides admins.
	MetricsToken string
	// Limits are the abuse limits (docs/OPERATIONS.md, "Abuse limits").
	Limits Limits
	// MaxConnsPerIP caps the connections one client address may hold open
	// (0: no cap); peers in TrustedProxies are exempt.
	MaxConnsPerIP int
	// MaxAnonSocketsPerIP caps the anonymous WebSocket connections of one
	// client address (0: no cap).
	MaxAnonSocketsPerIP int
	// Switches are the steering switches in force on this process, read
	// from memory (nil: the defaults).
	Switches func() model.Switches
	// Observe sees every live event this process receives (wshub.Config.Observe):
	// what keeps the shoppers' reads in memory current.
	Observe func(topic string, event []byte)
}

// AreaRoutes are one promotion's routes: API mounts its JSON routes under
// /api, Pages its HTML pages (either may be nil).
type AreaRoutes struct {
	API   func(m Mount)
	Pages func(m Mount)
	// Files are public, content-addressed files, served before sessions,
	// metrics and rate limits (goods: product pictures).
	Files func(r fiber.Router)
}

// Mount is where an area's routes go, and the middleware a route may put
// before its handler. For API, Open is /api and Staff /api/admin; for Pages,
// Open is the site (CSRF-checked forms) and Staff its /admin pages. Staff
// routes are for merchants and admins, and audited.
type Mount struct {
	Open  fiber.Router
	Staff fiber.Router
	// StaffKeyed mounts a staff POST (path under Staff) whose service runs
	// under backend.Keyed, which answers a held refusal for a key it has not
	// answered: while merchants are read-only such a write with a valid
	// Idempotency-Key goes on with the refusal held (merchantWrites), so a
	// retry of one answered before gets its first answer. Any other staff
	// write is refused at the door. (API mounts only: forms carry no key.)
	StaffKeyed func(path string, handlers ...fiber.Handler)
	User       fiber.Handler // signed-in callers only (401, or the sign-in page)
	Grab       fiber.Handler // the per-shopper grab rate limit
	Sale       fiber.Handler // a grab's door: 503 while the sale is paused (steering switches)
	Audit      fiber.Handler // writes the change to the audit log
}

// Defaults of the connection caps.
const (
	DefaultMaxConnsPerIP       = 256
	DefaultMaxAnonSocketsPerIP = 16
)

// Timeouts of the HTTP server. ReadTimeout covers a whole request, headers
// and body, from its first byte (fasthttp has no separate header timeout);
// a new connection must start its request within it too. Upgraded
// WebSocket connections set their own deadlines (web/wshub).
const (
	readTimeout  = 10 * time.Second
	writeTimeout = 30 * time.Second
	idleTimeout  = 60 * time.Second
)

// Limits are the rate limits (docs/OPERATIONS.md, "Abuse limits"); a zero Rate is off.
type Limits struct {
	Grab ratelimit.Rate // grabs per shopper
	Auth ratelimit.Rate // login and sign-up attempts per account and per client address
	IP   ratelimit.Rate // API requests per client address
}

// Server is the HTTP side of seckill.
type Server struct {
	App *fiber.App
	Hub *wshub.Hub

	redis      redis.UniversalClient
	audits     *audit.Service
	tokens     *account.Tokens
	log        *slog.Logger
	metrics    *metrics
	site       *handlers.Site
	ready      func(ctx context.Context) map[string]error
	trusted    []netip.Prefix
	limits     *limiters
	maxConns   int
	conns      *connLimitListener
	switches   func() model.Switches
	pausedSent atomic.Bool    // the pause state the sockets were last told (SwitchesChanged)
	keyed      []routePattern // the staff writes mounted by Mount.StaffKeyed (set while mounting)

	unavailableLog *logThrottle // requests failed because a backend is down
	readyLog       *logThrottle // readiness checks that failed
}

// New builds the application with every route mounted.
func New(cfg Config) *Server {
	s := &Server{redis: cfg.Redis, audits: cfg.Audit, tokens: cfg.Tokens, log: cfg.Log, ready: cfg.Ready, trusted: cfg.TrustedProxies,
		maxConns: cfg.MaxConnsPerIP, switches: cfg.Switches, unavailableLog: newLogThrottle(time.Second), readyLog: newLogThrottle(time.Second)}
	s.metrics = newMetrics(cfg.Registry)
	s.limits = newLimiters(cfg.Limits, nil)
	s.site = cfg.Site
	s.Hub = wshub.New(wshub.Config{Redis: cfg.Redis, Tokens: cfg.Tokens, Log: cfg.Log, Registry: cfg.Registry, Identify: identifySocket,
		PingInterval: cfg.PingInterval, ReadWindow: cfg.SocketReadWindow, MaxAnonPerIP: cfg.MaxAnonSocketsPerIP, Observe: cfg.Observe,
		Hello: s.pausedHello})
	s.pausedSent.Store(s.switchesNow().SalePaused)
	s.App = fiber.New(fiber.Config{
		AppName:               "seckill",
		ErrorHandler:          s.errorHandler,
		DisableStartupMessage: true,
		ReadTimeout:           readTimeout,
		WriteTimeout:          writeTimeout,
		IdleTimeout:           idleTimeout,
		BodyLimit:             BodyLimit,
		// Bodies are streamed and read by the bodies middleware, so one
		// declared large and sent slowly costs what has arrived; there are
		// no uploads, so multipart forms are parsed from that body too.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		// X-Forwarded-Proto (c.Protocol: Secure cookies, HSTS, the same-origin
		// check) is believed from trusted proxies only.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          prefixStrings(cfg.TrustedProxies),
	})
	srv := s.App.Server()
	// The hub owns upgraded WebSocket connections for their whole life.
	srv.KeepHijackedConns = true
	srv.HeaderReceived = headerReceived
	// Errors fasthttp meets reading a request reach Fiber's error handler
	// tidied into a status; keep the original, which quotes the request line
	// when the request could not be parsed, so isAPI can still tell.
	fiberErrors := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		ctx.SetUserValue(transportErrKey{}, err)
		setSecurityHeaders(&ctx.Response.Header, string(ctx.Path()), ctx.IsTLS())
		fiberErrors(ctx, err)
	}
	s.routes(cfg)
	return s
}

func (s *Server) routes(cfg Config) {
	app, h := s.App, s.site
	app.Use(utf8Text, bodies, recover.New(recover.Config{EnableStackTrace: true}))

	// Operations: outside metrics and auth so probes stay cheap.
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Use(s.securityHeaders)
	app.Get("/readyz", s.readyz)
	app.Get("/metrics", s.metricsGate(cfg.MetricsToken), adaptor.HTTPHandler(promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})))
	app.Get("/favicon.ico", favicon)
	app.Get("/static/:name", handlers.StaticFile)
	for _, a := range cfg.Areas { // public files, before sessions and metrics (goods: product pictures)
		if a.Files != nil {
			a.Files(app)
		}
	}

	app.Use(s.identify, s.observe, s.authenticate, h.Language)
	app.Get("/ws", s.Hub.Handle)

	// The platform's own API: accounts, settings, the audit log, users, notifications, the orders desk.
	api := app.Group("/api", s.limitIP, s.guardAPIWrites)
	api.Post("/auth/register", s.limitAuth, h.Register)
	api.Post("/auth/login", s.limitAuth, h.Login)
	api.Post("/auth/logout", requireUser, h.LogoutAPI)
	api.Get("/me", requireUser, h.Me)
	api.Put("/me/password", requireUser, s.limitAuth, h.ChangePassword)
	api.Get("/me/settings", requireUser, h.GetSettings)
	api.Put("/me/settings", requireUser, h.UpdateSettings)
	admin := api.Group("/admin", requireRole(model.RoleMerchant, model.RoleAdmin), s.merchantWrites, s.audit)
	admin.Get("/audit", h.AuditLog)
	admin.Get("/switches", requireRole(model.RoleAdmin), h.GetSwitches)
	admin.Put("/switches", requireRole(model.RoleAdmin), h.SetSwitches)
	admin.Post("/users", requireRole(model.RoleAdmin), h.CreateUser)
	admin.Get("/users", requireRole(model.RoleAdmin), h.AdminUsers)
	api.Get("/me/notifications", requireUser, h.MyNotifications)
	api.Get("/me/notifications/unread", requireUser, h.UnreadNotifications)
	api.Post("/me/notifications/read", requireUser, h.ReadNotifications)
	apiMount := Mount{Open: api, Staff: admin, User: requireUser, Grab: s.limitGrab, Sale: s.saleOpen, Audit: s.audit,
		StaffKeyed: func(path string, hs ...fiber.Handler) {
			s.keyed = append(s.keyed, patternOf(fiber.MethodPost, "/api/admin"+path))
			admin.Post(path, hs...)
		}}
	if cfg.BenchRoutes != nil {
		cfg.BenchRoutes(apiMount)
	}
	// Each promotion's API (cmd/seckill/app/area_*.go).
	for _, a := range cfg.Areas {
		if a.API != nil {
			a.API(apiMount)
		}
	}
	api.Use(func(c *fiber.Ctx) error { return db.Errorf(db.ENOTFOUND, "no such endpoint") })

	if cfg.Monitor != nil {
		app.Use(MonitorPath, requireRole(model.RoleAdmin), adaptor.HTTPHandler(withBackBar(cfg.Monitor)))
	}

	// The platform's own pages.
	pages := app.Group("", s.csrf)
	pages.Get("/", h.Home)
	pages.Get("/login", h.LoginPage)
	pages.Post("/login", s.limitAuth, h.LoginForm)
	pages.Get("/register", h.RegisterPage)
	pages.Post("/register", s.limitAuth, h.RegisterForm)
	pages.Post("/logout", h.Logout)
	pages.Post("/lang", h.SetLanguage)
	staff := pages.Group("/admin", requireRole(model.RoleMerchant, model.RoleAdmin), s.merchantWrites, s.audit)
	staff.Get("/", h.AdminDashboard)
	staff.Get("/switches", requireRole(model.RoleAdmin), h.SwitchesPage)
	staff.Post("/switches", requireRole(model.RoleAdmin), h.SwitchesForm)
	staff.Get("/audit", h.AuditPage)
	staff.Get("/users", requireRole(model.RoleAdmin), h.AdminUsersPage)
	staff.Post("/users", requireRole(model.RoleAdmin), h.AdminCreateUserForm)
	pages.Get("/me/notifications", requireUser, h.NotificationsPage)
	pages.Get("/settings", requireUser, h.SettingsPage)
	pages.Post("/settings", requireUser, h.SettingsForm)
	pages.Post("/settings/password", requireUser, s.limitAuth, h.PasswordForm)
	// The shopper's red packet winnings and coupons.
	pages.Get("/me/wallet", requireUser, h.WalletPage)
	// Each promotion's pages.
	for _, a := range cfg.Areas {
		if a.Pages != nil {
			a.Pages(Mount{Open: pages, Staff: staff, User: requireUser, Grab: s.limitGrab, Sale: s.saleOpen, Audit: s.audit})
		}
	}
}

// Start subscribes the hub to live events and joins the count of web
// processes that share the rate limits; Main then starts Loops.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Hub.Start(ctx); err != nil {
		return err
	}
	s.startMembers(ctx)
	return nil
}

// Loops are the server's background loops, ready after Start: the live
// hub's (wshub.Hub.Loops), then the rate limits' heartbeat (none with every
// limit off). Shutdown stops them.
func (s *Server) Loops() lifecycle.Loops {
	ls := slices.Clone(s.Hub.Loops())
	if s.limits.beat != nil {
		ls = append(ls, s.limits.beat)
	}
	return ls
}

// Listen serves on ln until Shutdown, closing at accept the connections of a
// client address over MaxConnsPerIP.
func (s *Server) Listen(ln net.Listener) error {
	if s.maxConns > 0 {
		s.conns = newConnLimitListener(ln, s.maxConns, s.trusted)
		ln = s.conns
	}
	return s.App.Listener(ln)
}

// readyz answers 200 when every part answers, else 503, naming each part
// "ok" or "down" and never the error's text, which is logged at most once a second.
func (s *Server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	parts := s.ready(ctx)
	state, status := make(map[string]string, len(parts)), fiber.StatusOK
	var down []any // part name, error: one log line a failed check, however many parts failed
	for name, err := range parts {
		state[name] = "ok"
		if err != nil {
			state[name], status = "down", fiber.StatusServiceUnavailable
			down = append(down, name, err.Error())
		}
	}
	if len(down) > 0 {
		if ok, suppressed := s.readyLog.allow(); ok {
			s.log.Warn("not ready", append(down, "suppressed", suppressed)...)
		}
	}
	return c.Status(status).JSON(state)
}

// metricsGate lets an admin (bearer or session cookie) or a Bearer of token
// (when set) through: 401 for anyone else, 403 for a user who is not an admin.
func (s *Server) metricsGate(token string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		raw, isBearer := requestToken(c)
		if isBearer && equalToken(raw, token) {
			return c.Next()
		}
		if raw == "" {
			return db.ErrUnauthorized
		}
		cl, err := s.tokens.Verify(raw)
		if err != nil {
			return db.ErrUnauthorized
		}
		if cl.Role != model.RoleAdmin {
			return db.ErrForbidden
		}
		return c.Next()
	}
}

// Shutdown stops accepting, drains requests in flight, then disconnects WebSocket clients.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.App.ShutdownWithContext(ctx)
	s.Hub.Close()
	s.stopMembers()
	return err
}

// identifySocket tells the hub who opens a socket, from what identify and
// authenticate have put on the request.
func identifySocket(c *fiber.Ctx) (model.Claims, netip.Addr) {
	cl, _ := handlers.ClaimsOf(c)
	return cl, handlers.ClientIP(c)
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
