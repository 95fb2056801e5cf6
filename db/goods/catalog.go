package goods

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// Catalog is what shoppers read of the goods (the live and upcoming slots,
// their goods, remaining stock, each one's state), served from this
// process's memory: a read makes no Redis command and no SQL statement.
//
// How stale a read may be: remaining stock follows the stock events every
// web process already receives (at most one push interval, 100 ms, plus the
// pub/sub hop behind Redis), and is read from Redis every CatalogPoll for
// the goods on sale, so an event lost (its process killed before it sent
// it) costs at most a poll; a state (upcoming, live, ended) is computed
// from the clock at each read, so it is never stale; a merchant's change
// (create, edit, hide, end, a picture) and a raffle's draw bump the
// catalog's generation in Redis and announce it (live.CatalogChanged): the
// process that made the change reloads before its next read, the others as
// soon as the announcement arrives, and each also polls the generation
// every CatalogPoll, so a lost announcement costs at most one poll.
//
// An ID the catalog does not know is not found from memory, after at most
// one shared check of the generation (a goods created on another process a
// moment ago is found): a flood of made-up IDs reaches neither SQL nor,
// beyond that shared check, Redis. Sales that ended more than CatalogKeep
// ago are read through to the store once per generation and remembered.
type Catalog struct {
	s *Service

	snap   atomic.Pointer[catalogSnap]
	loads  atomic.Uint64
	ver    atomic.Uint64 // bumped by every change a reader can see: a reload, a stock event
	events atomic.Uint64 // stock events applied, to keep them across a reload that raced them

	heard  atomic.Int64  // the newest generation announced or polled
	forced atomic.Uint64 // changes this process made (or events it may have missed): a snapshot older than the last is reloaded before a read
	wake   chan struct{}
	loop   *lifecycle.Loop // the poll (Loop)

	reload  sync.Mutex // one load at a time
	checkMu sync.Mutex // one generation check at a time for unknown IDs
	checked time.Time  // when the last one ran; guarded by checkMu

	past   sync.Mutex
	pastOf map[int64]pastGoods // goods of sales outside the window, by ID; guarded by past
}

// CatalogPoll is how often a process reads the catalog's generation, in case
// an announcement was lost.
const CatalogPoll = time.Second

// CatalogKeep is how long after its end a sale stays in memory; older ones
// are read from the store (and remembered) when asked for.
const CatalogKeep = 24 * time.Hour

// unknownCheckGap is the least time between two generation checks made for
// IDs the catalog does not know.
const unknownCheckGap = 20 * time.Millisecond

// pastMax bounds the goods of older sales remembered at once.
const pastMax = 4096

type catalogSnap struct {
	gen      int64  // the generation it was loaded at
	seq      uint64 // this process's count of loads, which tells snapshots apart
	forced   uint64 // Catalog.forced when its load began
	slots    map[int64]*model.Slot
	listed   []*model.Slot // shoppers' slot menu: not hidden, no rehearsal, soonest first
	goods    map[int64]*catalogGoods
	bySlot   map[int64][]*catalogGoods // in ID order
	maxSlot  int64
	maxGoods int64
	edges    []int64 // every start and end, unix ms, sorted: a state changes only there
}

type catalogGoods struct {
	g         model.Goods // as loaded; Remaining and State are filled at read
	leftovers bool        // a raffle's units left after the draw are on sale
	remaining atomic.Int64
	version   atomic.Int64  // of the newest stock event applied (0: none)
	changes   atomic.Uint64 // stock events applied
	lastEvent atomic.Uint64 // Catalog.events when the last one was applied
}

type pastGoods struct {
	gen int64
	g   *model.Goods
	err error
}

// Catalog returns the goods' catalog; Load it and start its Loop where
// shoppers read (a web process).
func (s *Service) Catalog() *Catalog { return s.catalog }

func newCatalog(s *Service) *Catalog {
	c := &Catalog{s: s, wake: make(chan struct{}, 1), pastOf: map[int64]pastGoods{}}
	c.loop = lifecycle.New("catalog poll", c.follow)
	return c
}

// Load loads the catalog, before its Loop keeps it current.
func (c *Catalog) Load(ctx context.Context) error {
	if err := c.load(ctx); err != nil {
		return fmt.Errorf("load the catalog: %w", err)
	}
	return nil
}

// Loop keeps the loaded catalog current until stopped: it reloads when a
// change is announced (Observe) or found on the poll. Main starts it.
func (c *Catalog) Loop() *lifecycle.Loop { return c.loop }

func (c *Catalog) follow(ctx context.Context) {
	t := time.NewTicker(CatalogPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
			gen, err := live.CatalogGeneration(ctx, c.s.Redis)
			if err != nil {
				continue
			}
			c.hear(gen)
			c.refreshStock(ctx)
		}
		if c.stale() {
			if err := c.load(ctx); err != nil && ctx.Err() == nil {
				c.s.Log.Warn("reload the catalog", "err", err)
			}
		}
	}
}

// Observe takes one live event as this process received it: stock events
// move remaining stock, an announced generation reloads the catalog, and
// an empty topic (the channel was subscribed again) reloads it before the
// next read.
func (c *Catalog) Observe(topic string, event []byte) {
	switch {
	case topic == "": // the live channel was subscribed again: events may have been missed
		if c.snap.Load() != nil {
			c.forced.Add(1)
		}
	case topic == live.TopicCatalog:
		if gen, err := strconv.ParseInt(string(event), 10, 64); err == nil {
			c.hear(gen)
		}
	case strings.HasPrefix(topic, "goods:") && bytes.HasPrefix(event, []byte(`{"type":"stock"`)):
		var ev sale.StockEvent
		if json.Unmarshal(event, &ev) != nil {
			return
		}
		c.applyStock(ev)
	}
}

func (c *Catalog) applyStock(ev sale.StockEvent) {
	snap := c.snap.Load()
	if snap == nil {
		return
	}
	g := snap.goods[ev.GoodsID]
	if g == nil {
		return
	}
	if ev.Version != 0 && ev.Version < g.version.Load() {
		return // an older state, reordered on the way
	}
	g.version.Store(ev.Version)
	g.remaining.Store(ev.Remaining)
	g.changes.Add(1)
	g.lastEvent.Store(c.events.Add(1))
	c.ver.Add(1)
}

// refreshStock reads the remaining stock of the goods on sale now from
// Redis, in one round trip, and takes what differs: the stock event of a
// change can be lost (its process killed within the push interval, a
// reconnect), and no other would follow a sale's last unit. Figures a
// stock event brought while it read are newer and kept.
func (c *Catalog) refreshStock(ctx context.Context) {
	snap := c.snap.Load()
	if snap == nil {
		return
	}
	now := c.s.Now()
	var live []*catalogGoods
	var rows []*model.Goods
	for _, g := range snap.goods {
		if sale.PreheatDue(now, g.g.StartAt, g.g.EndAt) {
			live = append(live, g)
			v := g.g
			v.Remaining = -1 // stays so for goods Redis does not hold
			rows = append(rows, &v)
		}
	}
	if len(rows) == 0 {
		return
	}
	before := c.events.Load()
	if err := c.s.FillRemaining(ctx, rows); err != nil {
		return
	}
	for i, g := range live {
		if rows[i].Remaining < 0 || g.lastEvent.Load() > before || g.remaining.Load() == rows[i].Remaining {
			continue
		}
		g.remaining.Store(rows[i].Remaining)
		g.changes.Add(1)
		c.ver.Add(1)
	}
}

// hear notes a generation announced or polled, and wakes the loader when it
// is newer than the one in memory.
func (c *Catalog) hear(gen int64) {
	for {
		old := c.heard.Load()
		if gen <= old || c.heard.CompareAndSwap(old, gen) {
			break
		}
	}
	if snap := c.snap.Load(); snap == nil || gen > snap.gen {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

func (c *Catalog) stale() bool {
	snap := c.snap.Load()
	return snap == nil || c.forced.Load() > snap.forced || c.heard.Load() > snap.gen
}

// changed is called by this process after it changed what shoppers read:
// every process is told, and this one reloads before its next read.
func (c *Catalog) changed(ctx context.Context) {
	c.forced.Add(1)
	if err := c.s.Events.CatalogChanged(ctx); err != nil {
		c.s.Log.Warn("announce a catalog change", "err", err)
	}
}

// announce tells the catalog that a change a shopper reads was made, unless *err says it was not.
func (s *Service) announce(ctx context.Context, err *error) {
	if *err == nil {
		s.catalog.changed(ctx)
	}
}

// load reads the slots that end after now-CatalogKeep with their goods and
// remaining stock, and swaps them in.
func (c *Catalog) load(ctx context.Context) error {
	c.reload.Lock()
	defer c.reload.Unlock()
	if c.snap.Load() != nil && !c.stale() {
		return nil // another reader loaded it while this one waited
	}
	forced := c.forced.Load() // a change made after this is not in what the load reads
	gen, err := live.CatalogGeneration(ctx, c.s.Redis)
	if err != nil {
		return err
	}
	events := c.events.Load()
	now := c.s.Now()
	since := now.Add(-CatalogKeep).UnixMilli()
	slots, err := c.s.QuerySlots(ctx, `end_ms > ? ORDER BY start_ms, id`, since)
	if err != nil {
		return err
	}
	rows, err := c.s.QueryGoods(ctx, `s.end_ms > ? ORDER BY g.id`, since)
	if err != nil {
		return err
	}
	var open []*model.Goods // goods whose stock Redis may hold
	for i := range rows {
		if !rows[i].EndAt.Before(now.Add(-time.Minute)) {
			open = append(open, &rows[i])
		}
	}
	if err := c.s.FillRemaining(ctx, open); err != nil {
		return err
	}
	next := &catalogSnap{gen: gen, seq: c.loads.Add(1), forced: forced, slots: make(map[int64]*model.Slot, len(slots)), goods: make(map[int64]*catalogGoods, len(rows)),
		bySlot: map[int64][]*catalogGoods{}}
	for i := range slots {
		sl := &slots[i]
		next.slots[sl.ID] = sl
		if !sl.Hidden && !sl.Rehearsal {
			next.listed = append(next.listed, sl)
		}
		next.maxSlot = max(next.maxSlot, sl.ID)
		next.edges = append(next.edges, sl.StartAt.UnixMilli(), sl.EndAt.UnixMilli())
	}
	prev := c.snap.Load()
	for i := range rows {
		g := &catalogGoods{g: rows[i]}
		g.remaining.Store(rows[i].Remaining)
		if old := prev.goodsOf(g.g.ID); old != nil {
			// The figure read is no older than any stock event applied
			// before: an event older than those is refused after the
			// reload as before it (a figure only moves forward).
			g.version.Store(old.version.Load())
			if old.lastEvent.Load() > events {
				// A stock event arrived while this load read Redis: it may be the newer figure.
				g.remaining.Store(old.remaining.Load())
			}
		}
		if g.g.Mode == model.ModeRaffle && !now.Before(g.g.StartAt) && c.s.Fair != nil {
			if g.leftovers, err = c.s.Fair.LeftoversOnSale(ctx, g.g.ID); err != nil {
				return err
			}
		}
		next.goods[g.g.ID] = g
		next.bySlot[g.g.SlotID] = append(next.bySlot[g.g.SlotID], g)
		next.maxGoods = max(next.maxGoods, g.g.ID)
		next.edges = append(next.edges, g.g.StartAt.UnixMilli(), g.g.EndAt.UnixMilli())
	}
	slices.Sort(next.edges)
	next.edges = slices.Compact(next.edges)
	c.snap.Store(next)
	c.ver.Add(1)
	return nil
}

func (s *catalogSnap) goodsOf(id int64) *catalogGoods {
	if s == nil {
		return nil
	}
	return s.goods[id]
}

// current is the snapshot to read, reloaded first when this process changed
// the catalog (so a merchant reads their own change at once). Nil when the
// catalog is not started, or its first load failed: the caller reads the store.
func (c *Catalog) current(ctx context.Context) *catalogSnap {
	if snap := c.snap.Load(); snap != nil && c.forced.Load() > snap.forced {
		if err := c.load(ctx); err != nil {
			c.s.Log.Warn("reload the catalog", "err", err)
		}
	}
	return c.snap.Load()
}

// Version changes whenever a read of the catalog could answer differently:
// a reload, a stock event, or the clock crossing a start or an end. Pages
// rendered at one version may be served again while it holds.
func (c *Catalog) Version(ctx context.Context) string {
	snap := c.current(ctx)
	if snap == nil {
		return ""
	}
	now := c.s.Now().UnixMilli()
	edge, _ := slices.BinarySearch(snap.edges, now+1) // edges passed
	b := make([]byte, 0, 32)
	b = strconv.AppendUint(b, snap.seq, 10)
	b = strconv.AppendUint(append(b, '.'), c.ver.Load(), 10)
	b = strconv.AppendInt(append(b, '.'), int64(edge), 10)
	return string(b)
}

// GoodsVersion is Version for one goods' own reads (its JSON, its page).
func (c *Catalog) GoodsVersion(ctx context.Context, id int64) string {
	snap := c.current(ctx)
	if snap == nil {
		return ""
	}
	g := snap.goods[id]
	if g == nil {
		return ""
	}
	b := make([]byte, 0, 32)
	b = strconv.AppendUint(b, snap.seq, 10)
	b = strconv.AppendUint(append(b, '.'), g.changes.Load(), 10)
	return string(append(append(b, '.'), sale.SlotState(c.s.Now(), g.g.StartAt, g.g.EndAt)...))
}

// Known reports whether the catalog answers from memory (it is started and loaded).
func (c *Catalog) Known(ctx context.Context) bool { return c.current(ctx) != nil }

// Slots lists the live and upcoming slots shoppers may see, soonest first
// (as Service.Slots).
func (c *Catalog) Slots(ctx context.Context) ([]model.Slot, error) {
	snap := c.current(ctx)
	if snap == nil {
		return c.s.Slots(ctx)
	}
	now := c.s.Now()
	out := []model.Slot{}
	for _, sl := range snap.listed {
		if sl.EndAt.After(now) && len(out) < 200 {
			out = append(out, c.slotAt(sl, now))
		}
	}
	return out, nil
}

func (c *Catalog) slotAt(sl *model.Slot, now time.Time) model.Slot {
	v := *sl
	v.State = sale.SlotState(now, v.StartAt, v.EndAt)
	return v
}

func (c *Catalog) goodsAt(g *catalogGoods, now time.Time) model.Goods {
	v := g.g
	v.Remaining = g.remaining.Load()
	v.State = sale.SlotState(now, v.StartAt, v.EndAt)
	return v
}

// ShopperSlot is Service.ShopperSlot from memory.
func (c *Catalog) ShopperSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error) {
	snap := c.lookup(ctx, func(s *catalogSnap) bool { _, ok := s.slots[id]; return ok || id <= 0 || id <= s.maxSlot })
	if snap == nil {
		return c.s.ShopperSlot(ctx, by, id)
	}
	sl, ok := snap.slots[id]
	if !ok {
		if id <= 0 || id > snap.maxSlot {
			return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
		}
		return c.s.ShopperSlot(ctx, by, id) // an older sale's (the store answers)
	}
	if sl.Hidden && !sale.Owns(by, sl.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	v := c.slotAt(sl, c.s.Now())
	return &v, nil
}

// ShopperSlotGoods is Service.ShopperSlotGoods from memory.
func (c *Catalog) ShopperSlotGoods(ctx context.Context, by model.Claims, slotID int64) ([]model.Goods, error) {
	sl, err := c.ShopperSlot(ctx, by, slotID)
	if err != nil {
		return nil, err
	}
	snap := c.snap.Load()
	if _, inMemory := snap.slotsOf(sl.ID); !inMemory {
		return c.s.ShopperSlotGoods(ctx, by, slotID)
	}
	now := c.s.Now()
	out := []model.Goods{}
	for _, g := range snap.bySlot[slotID] {
		if g.g.Listed() || sale.Owns(by, g.g.MerchantID) {
			out = append(out, c.goodsAt(g, now))
		}
	}
	return out, nil
}

func (s *catalogSnap) slotsOf(id int64) (*model.Slot, bool) {
	if s == nil {
		return nil, false
	}
	sl, ok := s.slots[id]
	return sl, ok
}

// ShopperGoods is Service.ShopperGoods from memory; leftovers tells whether
// a raffle's units left after its draw are on sale first come.
func (c *Catalog) ShopperGoods(ctx context.Context, by model.Claims, id int64) (g *model.Goods, leftovers bool, err error) {
	snap := c.lookup(ctx, func(s *catalogSnap) bool { return s.goods[id] != nil || id <= 0 || id <= s.maxGoods })
	if snap == nil {
		g, err := c.s.ShopperGoods(ctx, by, id)
		return g, false, err
	}
	cg := snap.goods[id]
	if cg == nil {
		if id <= 0 || id > snap.maxGoods {
			return nil, false, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
		}
		g, err := c.pastGoods(ctx, snap.gen, id)
		if err != nil {
			return nil, false, err
		}
		if !g.Listed() && !sale.Owns(by, g.MerchantID) {
			return nil, false, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
		}
		return g, false, nil
	}
	if !cg.g.Listed() && !sale.Owns(by, cg.g.MerchantID) {
		return nil, false, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
	}
	v := c.goodsAt(cg, c.s.Now())
	return &v, cg.leftovers, nil
}

// lookup is the snapshot to answer from; when found says it does not know
// the ID, the generation is checked first (at most once per
// unknownCheckGap, shared by every reader), so goods created on another
// process a moment ago are found.
func (c *Catalog) lookup(ctx context.Context, found func(*catalogSnap) bool) *catalogSnap {
	snap := c.current(ctx)
	if snap == nil || found(snap) {
		return snap
	}
	c.checkMu.Lock()
	if time.Since(c.checked) >= unknownCheckGap {
		c.checked = time.Now()
		if gen, err := live.CatalogGeneration(ctx, c.s.Redis); err == nil && gen > snap.gen {
			c.hear(gen)
			c.checkMu.Unlock()
			if err := c.load(ctx); err != nil {
				c.s.Log.Warn("reload the catalog", "err", err)
			}
			return c.snap.Load()
		}
	}
	c.checkMu.Unlock()
	return c.snap.Load()
}

// pastGoods reads goods of an older sale through to the store, once per generation.
func (c *Catalog) pastGoods(ctx context.Context, gen, id int64) (*model.Goods, error) {
	c.past.Lock()
	p, ok := c.pastOf[id]
	c.past.Unlock()
	if ok && p.gen == gen {
		return p.g, p.err
	}
	g, err := c.s.Get(ctx, id)
	if err != nil && db.ErrorCode(err) != db.ENOTFOUND {
		return nil, err // not remembered: a failure is no answer
	}
	c.past.Lock()
	if len(c.pastOf) >= pastMax {
		clear(c.pastOf)
	}
	c.pastOf[id] = pastGoods{gen: gen, g: g, err: err}
	c.past.Unlock()
	return g, err
}

// Shelf is the goods as the platform's pages read them (handlers.GoodsShelf):
// slots and their goods from the catalog, a shopper's orders and a
// merchant's figures from the service.
type Shelf struct{ *Catalog }

// Shelf returns the goods' shelf for the platform's pages.
func (s *Service) Shelf() Shelf { return Shelf{s.catalog} }

// MyOrders is Service.MyOrders.
func (sh Shelf) MyOrders(ctx context.Context, userID int64) ([]model.Order, error) {
	return sh.s.MyOrders(ctx, userID)
}

// MerchantSales is Service.MerchantSales.
func (sh Shelf) MerchantSales(ctx context.Context, by model.Claims) ([]model.SlotSales, error) {
	return sh.s.MerchantSales(ctx, by)
}
