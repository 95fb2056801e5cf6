package app

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/demo"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/db/redpacket"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/views/i18n"
	"github.com/seckill/seckill/web"
)

// An Area is one promotion as Main wires it: everything of it that Main
// would otherwise list beside every other promotion's. Each promotion builds
// its Area in its own file here (area_*.go); Main lists them in areas() and
// wires each the same way (wireAreas).
type Area struct {
	Name string
	// Service is the area's service. Its package is one area in the import
	// rules TestLayers checks: it imports no other area's.
	Service any
	// Uses are the names of the areas whose services this one composes
	// (checkout: goods and coupons); TestLayers lets it, and only it, import
	// their packages, and no area imports its.
	Uses []string
	// Routes are its JSON API and HTML pages, mounted by web.New.
	Routes web.AreaRoutes
	// Tasks are its background work: task handlers and periodic tasks.
	Tasks []tasks.Area
	// Flush moves its pending records from Redis to the durable store; the
	// process's one Flusher runs it with every other area's, each queue under its lane's lease.
	Flush func(context.Context) error
	// AfterFlush runs after each interval flush (goods samples its live charts).
	AfterFlush func(context.Context) error
	// Seed adds its demo items (DEMO=true).
	Seed demo.Seeder
	// Serve readies the loops the area runs in a web process while it
	// serves (goods: the catalog poll, the refusal memo, the phantom watch;
	// fair sales: the waiting rooms' tick, the proof-of-work floor), which
	// Main starts (Main.start) and stops at Close. nil: none.
	Serve func(ctx context.Context, p Process) (lifecycle.Loops, error)
}

// Process is what an area's Serve gets of the web process.
type Process struct {
	// Sockets are the live hub's sockets of this process.
	Sockets fair.QueueSockets
	// Failovers is this process's count of Redis failover errors.
	Failovers func() int64
}

// serveAreas readies every area's loops (Serve) and starts them (Main.start);
// Close stops them with the process's other loops, the last started first.
func (m *Main) serveAreas(ctx context.Context) error {
	p := Process{Sockets: m.Web.Hub, Failovers: m.Redis.Failovers.Load}
	for _, a := range m.Areas {
		if a.Serve == nil {
			continue
		}
		loops, err := a.Serve(ctx, p)
		if err != nil {
			return fmt.Errorf("start the %s area: %w", a.Name, err)
		}
		m.start(loops...)
	}
	return nil
}

// areas are the promotions, one line each: adding a promotion is its
// area_*.go and a line here (docs/ARCHITECTURE.md, "Adding a promotion"). Each area builds
// its service and its handlers; an area that composes others (fair sales,
// reminders, checkout) is given their services here, and the platform's
// pages get the shelves they show (handlers.Shelves).
func (m *Main) areas() []Area {
	// A grab passes the sale's pause, fair sales' admission (the sale
	// mode, the proof of work, pre-registration, the waiting room), then
	// the refusal memo, before Redis decides it (sale.NewSale).
	var fs *fair.Service
	gs := goods.New(m.Backend, func(g *goods.Service) goods.FairSales { fs = fair.New(m.Backend, g); return fs })
	gs.OrderTTL = m.Config.OrderTTL
	cs := &coupon.Service{Backend: m.Backend, Settings: m.Accounts, SMTPURL: m.Config.SMTPURL,
		WebhookSecret: outbound.Key(m.Config.WebhookSecret, m.secret), WebhookAllowPrivate: m.Config.WebhookAllowPrivate,
		RetryDelay: m.Config.ReminderRetryDelay, Translate: translate}
	rs := &redpacket.Service{Backend: m.Backend}
	if m.Site == nil { // a Main not opened (tests that read its areas)
		m.Site = new(handlers.Site)
	}
	m.Site.Shelves = handlers.Shelves{Goods: gs.Shelf(), RedPackets: rs, Coupons: cs}
	return []Area{
		m.redPacketsArea(rs),
		m.goodsArea(gs),
		m.fairArea(fs, gs),
		m.couponsArea(cs),
		m.remindersArea(gs, cs),
		m.checkoutArea(gs, cs),
	}
}

// AreaService is the service of the area called name (nil when there is none):
// for what sits beside the areas (the store's metrics, the bench, tests).
func AreaService[S any](m *Main, name string) S {
	var none S
	for _, a := range m.Areas {
		if a.Name == name {
			s, _ := a.Service.(S)
			return s
		}
	}
	return none
}

// wireAreas registers every area's flush step on the Flusher; the routes,
// tasks and seeders are read from m.Areas where each part is started.
func (m *Main) wireAreas() {
	for _, a := range m.Areas {
		if a.Flush != nil {
			m.Flusher.Register(a.Flush)
		}
		if a.AfterFlush != nil {
			m.Flusher.AfterEach(a.AfterFlush)
		}
	}
}

// seedDemo fills the demo accounts and every area's demo items.
func (m *Main) seedDemo(ctx context.Context) error {
	var seeders []demo.Seeder
	for _, a := range m.Areas {
		if a.Seed != nil {
			seeders = append(seeders, a.Seed)
		}
	}
	if err := demo.Seed(ctx, m.Accounts, seeders...); err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	return nil
}

// areaTasks are every area's background work.
func (m *Main) areaTasks() []tasks.Area {
	var all []tasks.Area
	for _, a := range m.Areas {
		all = append(all, a.Tasks...)
	}
	return all
}

// areaRoutes are every area's routes, in the order of areas().
func (m *Main) areaRoutes() []web.AreaRoutes {
	routes := make([]web.AreaRoutes, len(m.Areas))
	for i, a := range m.Areas {
		routes[i] = a.Routes
	}
	return routes
}

// translate is msg in the language of an account's locale (the shop's
// catalog, views/i18n): what outbound messages are written in.
func translate(locale, msg string) string {
	l, _ := i18n.Parse(locale)
	return l.T(msg)
}
