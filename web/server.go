// Package web owns the Fiber application: routes, middleware, the error
// handler that maps domain codes to HTTP, static files, the live hub at /ws
// and Asynqmon at /monitor.
package web

import (
	"context"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/redpacket"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/static"
	"github.com/seckill/seckill/web/ratelimit"
	"github.com/seckill/seckill/web/wshub"
	"github.com/valyala/fasthttp"
)

// MonitorPath is where Asynqmon is mounted.
const MonitorPath = "/monitor"

// Config is what the web server needs from the wiring.
type Config struct {
	Redis    redis.UniversalClient // the rate limiters' process count and the hub's live channel
	Coupons  *coupon.Service
	Inbox    *inbox.Service
	Accounts *account.Service
	Audit    *audit.Service
	Goods    *goods.Service
	Checkout *checkout.Service
	Tokens   *account.Tokens
	TokenTTL time.Duration
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
	// naive SQLite baseline grab) behind the API's middleware.
	BenchRoutes func(api fiber.Router)
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// MetricsToken, when set, lets a Bearer of it read /metrics besides admins.
	MetricsToken string
	// Limits are the abuse limits (README, "Abuse limits").
	Limits Limits
	// MaxConnsPerIP caps the connections one client address may hold open
	// (0: no cap); peers in TrustedProxies are exempt.
	MaxConnsPerIP int
	// MaxAnonSocketsPerIP caps the anonymous WebSocket connections of one
	// client address (0: no cap).
	MaxAnonSocketsPerIP int
	// RedPackets is the red packets' service.
	RedPackets *redpacket.Service
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

// Limits are the rate limits (README, "Abuse limits"); a zero Rate is off.
type Limits struct {
	Grab ratelimit.Rate // grabs per shopper
	Auth ratelimit.Rate // login and sign-up attempts per account and per client address
	IP   ratelimit.Rate // API requests per client address
}

// Server is the HTTP side of seckill.
type Server struct {
	App *fiber.App
	Hub *wshub.Hub

	redis    redis.UniversalClient
	audits   *audit.Service
	tokens   *account.Tokens
	log      *slog.Logger
	metrics  *metrics
	handlers *handlers.Handlers
	ready    func(ctx context.Context) map[string]error
	trusted  []netip.Prefix
	limits   *limiters
	maxConns int
	conns    *connLimitListener

	unavailableLog *logThrottle // requests failed because a backend is down
	readyLog       *logThrottle // readiness checks that failed
}

// New builds the application with every route mounted.
func New(cfg Config) *Server {
	s := &Server{redis: cfg.Redis, audits: cfg.Audit, tokens: cfg.Tokens, log: cfg.Log, ready: cfg.Ready, trusted: cfg.TrustedProxies,
		maxConns: cfg.MaxConnsPerIP, unavailableLog: newLogThrottle(time.Second), readyLog: newLogThrottle(time.Second)}
	s.metrics = newMetrics(cfg.Registry)
	s.limits = newLimiters(cfg.Limits, nil)
	s.handlers = &handlers.Handlers{Coupons: cfg.Coupons, Inbox: cfg.Inbox, Goods: cfg.Goods, Checkout: cfg.Checkout, RedPackets: cfg.RedPackets, Accounts: cfg.Accounts, Audit: cfg.Audit, Tokens: cfg.Tokens, TokenTTL: cfg.TokenTTL, MonitorPath: MonitorPath}
	s.Hub = wshub.New(wshub.Config{Redis: cfg.Redis, Tokens: cfg.Tokens, Log: cfg.Log, Registry: cfg.Registry, Identify: identifySocket,
		PingInterval: cfg.PingInterval, ReadWindow: cfg.SocketReadWindow, MaxAnonPerIP: cfg.MaxAnonSocketsPerIP})
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
	app, h := s.App, s.handlers
	app.Use(utf8Text, bodies, recover.New(recover.Config{EnableStackTrace: true}))

	// Operations: outside metrics and auth so probes stay cheap.
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Use(securityHeaders)
	app.Get("/readyz", s.readyz)
	app.Get("/metrics", s.metricsGate(cfg.MetricsToken), adaptor.HTTPHandler(promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{})))
	app.Get("/favicon.ico", favicon)
	app.Use("/static", filesystem.New(filesystem.Config{Root: http.FS(mustSub(static.Files, ".")), MaxAge: 3600}))
	app.Get(goods.ImagePath+":hash", h.Image) // product pictures, public and content-addressed

	app.Use(s.identify, s.observe, s.authenticate)
	app.Get("/ws", s.Hub.Handle)

	api := app.Group("/api", s.limitIP, s.guardAPIWrites)
	api.Post("/auth/register", s.limitAuth, h.Register)
	api.Post("/auth/login", s.limitAuth, h.Login)
	api.Post("/auth/logout", requireUser, h.LogoutAPI)
	api.Get("/me", requireUser, h.Me)
	api.Put("/me/password", requireUser, s.limitAuth, h.ChangePassword)
	api.Get("/me/settings", requireUser, h.GetSettings)
	api.Put("/me/settings", requireUser, h.UpdateSettings)
	admin := api.Group("/admin", requireRole(model.RoleMerchant, model.RoleAdmin), s.audit)
	admin.Get("/audit", h.AuditLog)
	admin.Post("/users", requireRole(model.RoleAdmin), h.CreateUser)
	// coupons
	admin.Post("/coupons", h.CreateCoupon)
	admin.Get("/coupons", h.AdminCoupons)
	admin.Put("/coupons/:id", h.UpdateCoupon)
	admin.Get("/coupons/:id/stats", h.CouponStats)
	api.Get("/coupons", h.ListCoupons)
	api.Get("/coupons/:id", h.GetCoupon)
	api.Post("/coupons/:id/grab", s.limitGrab, h.GrabCoupon)
	api.Get("/coupons/:id/reminders", requireUser, h.CouponReminders)
	api.Put("/coupons/:id/reminders", requireUser, h.BookReminder)
	api.Delete("/coupons/:id/reminders", requireUser, h.CancelReminder)
	api.Get("/me/coupons", requireUser, h.MyCoupons)
	api.Get("/me/reminders", requireUser, h.MyReminders)
	api.Get("/me/notifications", requireUser, h.MyNotifications)
	api.Get("/me/notifications/unread", requireUser, h.UnreadNotifications)
	api.Post("/me/notifications/read", requireUser, h.ReadNotifications)
	if cfg.BenchRoutes != nil {
		cfg.BenchRoutes(api)
	}
	// red packets
	api.Get("/redpackets", h.ListRedPackets)
	api.Get("/redpackets/:id", h.GetRedPacket)
	api.Post("/redpackets/:id/grab", s.limitGrab, h.GrabRedPacket)
	api.Get("/redpackets/:id/grabs", h.RedPacketGrabs)
	admin.Post("/redpackets", h.CreateRedPacket)
	admin.Get("/redpackets", h.AdminListRedPackets)
	admin.Get("/redpackets/:id/stats", h.RedPacketStats)
	// goods
	api.Get("/slots", h.ListSlots)
	api.Get("/slots/:id/goods", h.SlotGoods)
	api.Get("/goods/:id", h.GetGoods)
	api.Post("/goods/:id/grab", s.limitGrab, h.Grab)
	api.Get("/goods/:id/reminders", requireUser, h.GoodsReminders)
	api.Put("/goods/:id/reminders", requireUser, h.BookGoodsReminder)
	api.Delete("/goods/:id/reminders", requireUser, h.CancelGoodsReminder)
	api.Get("/orders/:id", requireUser, h.GetOrder)
	api.Post("/orders/:id/pay", requireUser, h.CheckoutPay)
	api.Post("/orders/:id/refund", requireUser, s.audit, h.Refund)
	api.Post("/payments/callback", h.PaymentCallback)
	api.Post("/orders/:id/cancel", requireUser, h.CancelOrder)
	api.Get("/me/orders", requireUser, h.MyOrders)
	admin.Get("/slots", h.AdminListSlots)
	admin.Post("/slots", h.CreateSlot)
	admin.Put("/slots/:id", h.UpdateSlot)
	admin.Post("/goods", h.CreateGoods)
	admin.Put("/goods/:id", h.UpdateGoods)
	admin.Get("/goods/:id/stats", h.GoodsStats)
	// merchant: end, samples, pictures, totals, accounts (handlers/merchant.go)
	admin.Post("/goods/:id/end", h.EndGoods)
	admin.Post("/slots/:id/end", h.EndSlot)
	admin.Get("/goods/:id/samples", h.GoodsSamples)
	admin.Get("/slots/:id/samples", h.SlotSamples)
	admin.Get("/slots/:id/stats", h.SlotStats)
	admin.Post("/goods/:id/image", h.UploadGoodsImage)
	admin.Get("/users", requireRole(model.RoleAdmin), h.AdminUsers)
	admin.Get("/goods/:id/orders.csv", h.OrdersCSV)
	// Merchant orders desk and exports (issue 24).
	admin.Get("/orders", h.DeskOrders)
	admin.Get("/orders/:id", h.DeskOrder)
	admin.Post("/orders/:id/refund", h.DeskRefund)
	admin.Get("/redpackets/:id/grabs.csv", h.RedPacketGrabsCSV)
	admin.Get("/coupons/:id/claims.csv", h.CouponClaimsCSV)
	api.Use(func(c *fiber.Ctx) error { return db.Errorf(db.ENOTFOUND, "no such endpoint") })

	if cfg.Monitor != nil {
		app.Use(MonitorPath, requireRole(model.RoleAdmin), adaptor.HTTPHandler(withBackBar(cfg.Monitor)))
	}

	pages := app.Group("", s.csrf)
	pages.Get("/", h.Home)
	pages.Get("/login", h.LoginPage)
	pages.Post("/login", s.limitAuth, h.LoginForm)
	pages.Get("/register", h.RegisterPage)
	pages.Post("/register", s.limitAuth, h.RegisterForm)
	pages.Post("/logout", h.Logout)
	staff := pages.Group("/admin", requireRole(model.RoleMerchant, model.RoleAdmin), s.audit)
	staff.Get("/", h.AdminDashboard)
	staff.Get("/audit", h.AuditPage)
	// red packets
	pages.Get("/redpackets", h.RedPacketsPage)
	pages.Get("/redpackets/:id", h.RedPacketPage)
	staff.Get("/redpackets", h.AdminRedPacketsPage)
	staff.Post("/redpackets", h.AdminCreateRedPacketForm)
	staff.Get("/redpackets/:id", h.AdminRedPacketPage)
	// goods
	pages.Get("/slots", h.SlotsPage)
	pages.Get("/slots/:id", h.SlotsPage)
	pages.Get("/goods/:id", h.GoodsPage)
	pages.Get("/me/orders", requireUser, h.MyOrdersPage)
	pages.Get("/orders/:id/checkout", requireUser, h.CheckoutPage)
	staff.Get("/slots", h.AdminSlotsPage)
	staff.Post("/slots", h.AdminCreateSlot)
	staff.Get("/slots/:id", h.AdminSlotPage)
	staff.Post("/slots/:id", h.AdminUpdateSlot)
	staff.Post("/slots/:id/goods", h.AdminCreateGoods)
	staff.Get("/goods/:id", h.AdminGoodsPage)
	staff.Post("/goods/:id", h.AdminUpdateGoods)
	staff.Post("/goods/:id/end", h.AdminEndGoodsForm)
	staff.Post("/goods/:id/hidden", h.AdminHideGoodsForm)
	staff.Post("/goods/:id/image", h.AdminImageForm)
	staff.Post("/slots/:id/end", h.AdminEndSlotForm)
	staff.Post("/slots/:id/hidden", h.AdminHideSlotForm)
	staff.Get("/users", requireRole(model.RoleAdmin), h.AdminUsersPage)
	staff.Post("/users", requireRole(model.RoleAdmin), h.AdminCreateUserForm)
	// coupons
	staff.Get("/coupons", h.AdminCouponsPage)
	staff.Post("/coupons", h.AdminCreateCouponForm)
	staff.Get("/coupons/:id", h.AdminCouponPage)
	staff.Post("/coupons/:id", h.AdminCouponWindowForm)
	// Merchant orders desk: search, an order's history, refund after a confirm page (issue 24).
	staff.Get("/orders", h.DeskPage)
	staff.Get("/orders/:id", h.DeskOrderPage)
	staff.Get("/orders/:id/refund", h.DeskRefundConfirm)
	staff.Post("/orders/:id/refund", h.DeskRefundForm)
	staff.Get("/redpackets/:id/grabs", h.RedPacketGrabsPage)
	staff.Get("/coupons/:id/claims", h.CouponClaimsPage)
	pages.Get("/coupons", h.CouponsPage)
	pages.Get("/me/coupons", requireUser, h.MyCouponsPage)
	pages.Get("/me/reminders", requireUser, h.MyRemindersPage)
	pages.Get("/me/notifications", requireUser, h.NotificationsPage)
	pages.Get("/settings", requireUser, h.SettingsPage)
	pages.Post("/settings", requireUser, h.SettingsForm)

	// Issue 24 (front page and wallet): the shopper's red packet winnings and coupons.
	pages.Get("/me/wallet", requireUser, h.WalletPage)

	// Confirm before what cannot be undone (a GET asks, the POST does it:
	// no script needed), the receipt that paying ends on, and the password
	// change in Settings (handlers/confirm.go, handlers/accounts.go).
	pages.Get("/orders/:id/refund", requireUser, h.RefundConfirmPage)
	pages.Post("/orders/:id/refund", requireUser, s.audit, h.RefundForm)
	pages.Get("/orders/:id/cancel", requireUser, h.CancelConfirmPage)
	pages.Post("/orders/:id/cancel", requireUser, h.CancelForm)
	pages.Post("/orders/:id/pay", requireUser, h.PayForm)
	pages.Get("/orders/:id/receipt", requireUser, h.ReceiptPage)
	staff.Get("/goods/:id/end", h.AdminEndGoodsConfirm)
	staff.Get("/slots/:id/end", h.AdminEndSlotConfirm)
	pages.Post("/settings/password", requireUser, s.limitAuth, h.PasswordForm)
}

// Start subscribes the hub to live events and joins the count of web
// processes that share the rate limits.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Hub.Start(ctx); err != nil {
		return err
	}
	s.startMembers(ctx)
	return nil
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
	for name, err := range parts {
		state[name] = "ok"
		if err != nil {
			state[name], status = "down", fiber.StatusServiceUnavailable
			if ok, suppressed := s.readyLog.allow(); ok {
				s.log.Warn("not ready", "part", name, "err", err, "suppressed", suppressed)
			}
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

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
