package fair

import (
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Fair sales, the part before the grab: a goods' proof of work (pass.go)
// and pre-registration (only shoppers who booked its reminder). The grab
// path reads each goods' settings from the store at most once per
// fairRefresh per process; the proof's replay check is one SET NX, made
// only for goods that ask for a proof and only for a proof that checked
// out, so a flood of bad proofs never reaches Redis.
//
// The replay check is its own round trip rather than part of the grab
// script: the script runs more than once for one grab (a reshard, a
// sequence block, a load, a unit from another bucket), and the queue join
// and raffle entry take the same proof without any grab script.

// Automatic raise of the proof of work while a goods is under attack, one
// level for every process: over windows of PowWindow (numbered from the
// epoch, alike on every process), a window with at least
// powAttackRefusals refusals (no proof, a bad proof, not pre-registered,
// the limit reached) and at least powAttackRatio refusals per admitted
// grab raises the bits by 2 (up to powRaiseCap above the merchant's, and
// MaxPowBits); a window below that lowers them by 2 until back at the
// merchant's. Each process counts in memory and adds its counts to the
// goods' record in Redis (powAttackLua) at most once per powSync when it
// gives a challenge, and once a second from the fair area's loop
// (SyncPow), so a refusal costs no round trip. Goods without a proof of
// work (pow_bits 0) are left alone.
const (
	PowWindow         = 10 * time.Second
	powAttackRefusals = 20
	powAttackRatio    = 10
	powRaiseCap       = 8
	powSync           = time.Second
	fairRefresh       = time.Second
)

// powKey marks a proof of work as used until its challenge expires.
func powKey(goodsID int64, nonce string) string { return goods.HashTag(goodsID) + ":pow:" + nonce }

// fairGoods is one goods' fair-sale settings and this process's share of
// its attack measure.
type fairGoods struct {
	// snap is the settings as last read, read without a lock (nil: read them).
	snap atomic.Pointer[fairSnap]

	mu      sync.Mutex         // the attack measure's
	cur     powCounts          // counted here in the latest window, not yet added to the record in Redis
	refused map[int64]struct{} // the shoppers refused in cur's window: each counts once
	late    powCounts          // counted in an earlier window, not yet added
	raise   int                // bits added while under attack, as the record last said
	synced  time.Time          // when this process last added its counts
	syncing bool               // a sync is under way: others read raise as it is
}

// fairSnap is one read of a goods' fair-sale settings.
type fairSnap struct {
	read   time.Time
	found  bool
	bits   int // the merchant's pow_bits
	prereg bool
	queue  bool // sold through a waiting room: a grab needs an admission (pass.go)
	raffle bool // sold by a draw: a grab is refused (raffle.go)
	// leftovers: a raffle drawn whose units left are sold first come
	// (raffle.LeftoversOnSale): a grab passes as for goods first come.
	leftovers bool
	// powFrom is when challenges are first given: PowLead before a
	// first-come sale's start, a raffle's entry start, a waiting room's
	// creation (joining is open from then).
	powFrom time.Time
}

type fairCache struct {
	mu sync.RWMutex
	m  map[int64]*fairGoods
}

func newFairCache() *fairCache { return &fairCache{m: map[int64]*fairGoods{}} }

func (c *fairCache) get(id int64) *fairGoods {
	c.mu.RLock()
	g := c.m[id]
	c.mu.RUnlock()
	if g != nil {
		return g
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g = c.m[id]
	if g == nil {
		if len(c.m) > 100_000 { // ids that do not exist, say: start over
			c.m = map[int64]*fairGoods{}
		}
		g = &fairGoods{}
		c.m[id] = g
	}
	return g
}

// all is every goods read so far.
func (c *fairCache) all() map[int64]*fairGoods {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[int64]*fairGoods, len(c.m))
	for id, g := range c.m {
		out[id] = g
	}
	return out
}

// forget drops the settings read, so the next grab reads them again.
func (c *fairCache) forget(id int64) {
	if c == nil {
		return
	}
	c.get(id).snap.Store(nil)
}

// settings returns the goods' fair-sale settings, read at most once per fairRefresh.
// The snapshot returned is what the caller reads them from, with no lock.
func (s *Service) fairSettings(ctx context.Context, goodsID int64) (*fairGoods, *fairSnap, error) {
	f := s.fair.get(goodsID)
	now := s.Now()
	if sn := f.snap.Load(); sn != nil && now.Sub(sn.read) < fairRefresh && !now.Before(sn.read) {
		return f, sn, nil
	}
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	sn := &fairSnap{read: now}
	switch {
	case db.ErrorCode(err) == db.ENOTFOUND:
	case err != nil:
		if sn := f.snap.Load(); sn != nil { // the store is away: go on with what was read last
			return f, sn, nil
		}
		return nil, nil, err
	default:
		sn.found, sn.bits, sn.prereg = true, g.PowBits, g.PreregisteredOnly
		sn.queue, sn.raffle = g.Mode == model.ModeQueue, g.Mode == model.ModeRaffle
		if sn.raffle && !now.Before(g.StartAt) {
			if sn.leftovers, err = s.LeftoversOnSale(ctx, goodsID); err != nil {
				s.Log.Warn("read whether a raffle's units left are on sale; refused until read", "goods", goodsID, "err", err)
			}
		}
		switch {
		case sn.raffle && g.EntryStartAt != nil:
			sn.powFrom = *g.EntryStartAt
		case !sn.queue && !sn.raffle:
			sn.powFrom = g.StartAt.Add(-PowLead)
		}
	}
	f.snap.Store(sn)
	return f, sn, nil
}

// bits is the merchant's pow_bits as last read (0 before any read).
func (f *fairGoods) bits() int {
	if sn := f.snap.Load(); sn != nil {
		return sn.bits
	}
	return 0
}

// windowOf numbers the attack window holding t.
func windowOf(t time.Time) int64 { return t.UnixMilli() / PowWindow.Milliseconds() }

// powCounts is one window's refusals and admissions counted by this process.
type powCounts struct {
	window            int64
	refused, admitted int
}

func (c powCounts) empty() bool { return c.refused+c.admitted == 0 }

// count records one outcome of userID's for the attack measure, in
// memory: an admission (a grab that won or reached the limit, a join, an
// entry) or a refusal. A shopper's refusals count once a window, so one
// caller's failures never raise another's work: the raise needs
// powAttackRefusals shoppers refused.
func (f *fairGoods) count(now time.Time, admitted bool, userID int64) {
	if f.bits() == 0 { // no proof of work: nothing to measure
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := windowOf(now); w != f.cur.window {
		if !f.cur.empty() { // the next sync sends them in their own window (two or more windows unsent: the latest)
			f.late = powCounts{window: f.cur.window, refused: f.late.refused + f.cur.refused, admitted: f.late.admitted + f.cur.admitted}
		}
		f.cur = powCounts{window: w}
		f.refused = nil
	}
	if admitted {
		f.cur.admitted++
		return
	}
	if _, again := f.refused[userID]; again {
		return
	}
	if f.refused == nil {
		f.refused = map[int64]struct{}{}
	}
	if len(f.refused) < maxRefusedTracked {
		f.refused[userID] = struct{}{}
	}
	f.cur.refused++
}

// maxRefusedTracked bounds the shoppers one goods remembers as refused in a
// window; past it, every refusal counts (a crowd that large is an attack).
const maxRefusedTracked = 1 << 16

// powAttackKey is a goods' attack record in Redis: the open window's
// number and counts, and the raise it stands at.
func powAttackKey(goodsID int64) string { return goods.HashTag(goodsID) + ":pow:attack" }

// powAttackLua adds one process's counts of two windows (an earlier one
// and the latest) to a goods' attack record and closes every window that
// ended by now, raising or lowering the bits once per window closed
// (windows closed with nothing in them lower too). Counts of a window
// closed already are added to the open one: a process a little late with
// its share still counts.
//
// KEYS[1] powAttackKey
// ARGV    earlier window, its refusals, its admissions,
//
//	latest window, its refusals, its admissions, now's window,
//	powAttackRefusals, powAttackRatio, the raise's cap
//
// Returns the raise in bits, as it stands now.
var powAttackLua = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'w', 'r', 'a', 'raise')
local w, r, a, raise = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0
local minR, ratio, cap = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local function close(to)
  if w == nil then w = to return end
  if to <= w then return end
  if r >= minR and r >= ratio * math.max(a, 1) then raise = math.min(raise + 2, cap) else raise = math.max(raise - 2, 0) end
  raise = math.max(raise - 2 * (to - w - 1), 0)
  w, r, a = to, 0, 0
end
close(tonumber(ARGV[1]))
r, a = r + tonumber(ARGV[2]), a + tonumber(ARGV[3])
close(tonumber(ARGV[4]))
r, a = r + tonumber(ARGV[5]), a + tonumber(ARGV[6])
close(tonumber(ARGV[7]))
raise = math.min(raise, cap)
redis.call('HSET', KEYS[1], 'w', w, 'r', r, 'a', a, 'raise', raise)
redis.call('PEXPIRE', KEYS[1], 3600000)
return raise`)

// sync adds this process's counts to the goods' record and reads the
// raise back (powAttackLua); force skips the wait of powSync. Another
// sync under way, or one made less than powSync ago, leaves it to that one.
func (s *Service) sync(ctx context.Context, goodsID int64, f *fairGoods, now time.Time, force bool) {
	bits := f.bits()
	if bits == 0 {
		return
	}
	f.mu.Lock()
	if f.syncing || (!force && now.Sub(f.synced) < powSync && windowOf(now) == windowOf(f.synced)) {
		f.mu.Unlock()
		return
	}
	late, cur := f.late, f.cur
	if cur.empty() {
		cur.window = windowOf(now)
	}
	if late.empty() {
		late.window = cur.window
	}
	f.late, f.cur, f.syncing = powCounts{}, powCounts{window: cur.window}, true
	f.mu.Unlock()

	capped := max(min(powRaiseCap, MaxPowBits-bits), 0)
	// now may be older than the counts it sends (SyncPow read the clock
	// before a count in the next window): they stay in their own window,
	// never moved back into the one before, which would close their window
	// early and count the attack as two quiet ones.
	nowW := max(windowOf(now), cur.window)
	raise, err := powAttackLua.Run(ctx, s.Redis, []string{powAttackKey(goodsID)},
		min(late.window, nowW), late.refused, late.admitted, min(cur.window, nowW), cur.refused, cur.admitted, nowW,
		powAttackRefusals, powAttackRatio, capped).Int()

	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncing = false
	if err != nil { // Redis is away: the counts wait for the next try (folded into the latest), the raise stays
		f.cur.refused += late.refused + cur.refused
		f.cur.admitted += late.admitted + cur.admitted
		return
	}
	f.raise, f.synced = raise, now
}

// level is the level asked of goods now: the merchant's bits plus the
// shared raise, read again at most once per powSync, and never below the
// floor every goods asks (Floor).
func (s *Service) level(ctx context.Context, goodsID int64, f *fairGoods) int {
	bits := f.bits()
	if bits == 0 {
		return s.floor()
	}
	s.sync(ctx, goodsID, f, s.Now(), false)
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(min(bits+f.raise, MaxPowBits), s.floor())
}

// floor is the least proof of work of every goods now (Floor), 0 to MaxPowBits.
func (s *Service) floor() int {
	if s.Floor == nil {
		return 0
	}
	return min(max(s.Floor(), 0), MaxPowBits)
}

// SyncPow adds this process's attack counts of every goods to the shared
// records: the fair area's loop calls it once a second, so a process that
// only refuses grabs still counts.
func (s *Service) SyncPow(ctx context.Context) { s.syncPowAt(ctx, s.Now()) }

// syncPowAt is SyncPow with the clock read at now.
func (s *Service) syncPowAt(ctx context.Context, now time.Time) {
	for id, f := range s.fair.all() {
		f.mu.Lock()
		pending := !f.cur.empty() || !f.late.empty()
		f.mu.Unlock()
		if pending {
			s.sync(ctx, id, f, now, true)
		}
	}
}

func (s *Service) powKey() []byte { return s.PowKey }

// randomKey is a process's own proof-of-work key, until Main sets the server's.
func randomKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// PowChallenge returns a proof-of-work challenge for a grab of goods by
// user (its bits 0 when the goods asks for none); not found for goods
// shoppers cannot see; not started before challenges are given (powFrom).
func (s *Service) PowChallenge(ctx context.Context, userID, goodsID int64) (*Challenge, error) {
	if goodsID <= 0 || goodsID > goods.MaxID {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	f, sn, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	if !sn.found {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	now := s.Now()
	if now.Before(sn.powFrom) {
		return nil, db.Errorf(db.ENOTSTARTED, "challenges for goods %d are given from %s (%s before the sale's start): a solution is good for a minute",
			goodsID, sn.powFrom.UTC().Format(time.RFC3339), PowLead)
	}
	c := newChallenge(s.powKey(), goodsID, userID, s.level(ctx, goodsID, f), now.Add(PowTTL))
	return &c, nil
}

// notPreregistered is the refusal of a shopper who did not book the reminder of pre-registered goods.
var notPreregistered = &db.Error{Code: db.EFORBIDDEN,
	Message: "this sale is open only to shoppers who pre-registered by booking its reminder before the start"}

// Admit checks that a shopper may try for goods: the proof of work pow
// (an X-Pow header, "" for none) when the goods asks for one, spent here
// once, and the shopper's reminder booking when the goods is pre-registered
// only. A grab, a queue join or a raffle entry calls it first.
func (s *Service) Admit(ctx context.Context, userID, goodsID int64, pow string) error {
	if goodsID <= 0 || goodsID > goods.MaxID {
		return nil // the grab answers not found
	}
	f, sn, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return err
	}
	req, _ := db.KeyedRequestID(ctx, "admit", userID)
	if err := s.admit(ctx, f, sn, userID, goodsID, pow, req); err != nil {
		return err
	}
	f.count(s.Now(), true, userID) // a join or an entry let in counts as a grab that won does
	return nil
}

// admit is Admit with the goods' settings read: the proof of work (pow_bits
// > 0) and the pre-registration; a goods with neither costs nothing more.
// req is the request's keyed ID ("" unkeyed): a proof is spent under it, so
// the retry of a keyed request that spent it and was left undecided (503:
// the replica wait ran out, the store failed) may bring it again and be
// decided afresh; another request is refused it.
func (s *Service) admit(ctx context.Context, f *fairGoods, sn *fairSnap, userID, goodsID int64, pow, req string) error {
	bits, prereg := max(sn.bits, s.floor()), sn.prereg
	if bits == 0 && !prereg {
		return nil
	}
	now := s.Now()
	if bits > 0 {
		if pow == "" {
			f.count(now, false, userID)
			return db.ErrPowRequired
		}
		sol, ok := checkPow(s.powKey(), pow, goodsID, userID, now)
		if !ok || sol.level < s.floor() { // solved below the floor raised since
			f.count(now, false, userID)
			return db.ErrPowInvalid
		}
		if prereg {
			if err := s.preregistered(ctx, f, userID, goodsID, now); err != nil {
				return err
			}
		}
		// Kept until the challenge expires by the wall clock (plus a
		// margin for clocks that differ): by then checkPow refuses it
		// anyway. Spent durably: a proof spent before a failover stays spent.
		// The spender is the shopper and this attempt (a keyed request's
		// key, else a fresh ID): a spend go-redis sends again after a lost
		// reply finds its own (rdb.TakeOwned), not another request's.
		ttl := time.Until(sol.expires) + time.Minute
		dctx, c := s.Durable(ctx)
		spender := strconv.FormatInt(userID, 10) + ":"
		if req != "" {
			spender += req
		} else {
			spender += rdb.NewRequestID()
		}
		fresh, err := rdb.TakeOwned(dctx, c, powKey(goodsID, sol.nonce), spender, max(ttl, time.Minute))
		if err != nil {
			return err
		}
		if !fresh { // spent by another request
			f.count(now, false, userID)
			return db.ErrPowInvalid
		}
		return nil
	}
	if prereg {
		return s.preregistered(ctx, f, userID, goodsID, now)
	}
	return nil
}

func (s *Service) preregistered(ctx context.Context, f *fairGoods, userID, goodsID int64, now time.Time) error {
	b, err := s.Goods.ReminderStore().Bits(ctx, userID, goodsID)
	if err != nil {
		return err
	}
	if b == 0 {
		f.count(now, false, userID)
		return notPreregistered
	}
	return nil
}

// Check is the fair sale's stage of the goods' grab (goods.Stage, handed
// to the sale at its construction: goods.New): a grab passes the sale mode
// (checkSaleMode) and Admit, and of queued goods carries a valid admission
// (X-Admission). The goods' settings are read once (from memory,
// lock-free) for the sale mode, the proof of work and the
// pre-registration. Goods whose settings ask nothing of a grab (first
// come, no proof, no pre-registration, or a raffle's units left after its
// draw) are marked in Quiet for as long as those settings are trusted
// (fairRefresh): the engine lets their grabs pass without calling Check.
func (s *Service) Check(ctx context.Context, g goods.Grab) (done func(goods.Outcome), err error) {
	userID, goodsID, p := g.User, g.Goods, g.Pass
	gen := s.quiet.Gen() // before the settings: a change after it unmarks what they say
	f, sn, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	if err := s.checkSaleMode(sn, userID, goodsID, p.Admission); err != nil {
		return nil, err
	}
	if err := s.admit(ctx, f, sn, userID, goodsID, p.Pow, g.Request); err != nil {
		return nil, err
	}
	if sn.bits == 0 && !sn.queue { // nothing to count, no admission to tell: no outcome wanted
		if sn.found && (!sn.raffle || sn.leftovers) && !sn.prereg && s.floor() == 0 {
			s.quiet.Mark(goodsID, gen, sn.read, sn.read.Add(fairRefresh))
		}
		return nil, nil
	}
	start := s.Now()
	return func(o goods.Outcome) {
		err := o.Err
		if err == nil || db.ErrorCode(err) == db.ELIMITREACHED {
			f.count(s.Now(), err == nil, userID)
		}
		if sn.queue { // the waiting room's health and used admissions (queue_outflow.go)
			s.grabDone(goodsID, userID, p.Admission, start, err)
		}
	}, nil
}

// Quiet is the goods whose grabs Check has nothing to check of for now
// (goods.Quieting): the engine passes Check by for them.
func (s *Service) Quiet() *goods.Quiet { return s.quiet }

// checkSaleMode refuses a grab of a raffle's goods (not_drawn: its units go
// to the draw's winners, raffle.go) until the draw left units no entry can
// claim, sold first come (raffle.LeftoversOnSale), and of goods sold through a waiting room
// unless admission is a valid token for the shopper (settings from the grab
// path's cache; the token checked in memory). Other goods ignore it.
func (s *Service) checkSaleMode(sn *fairSnap, userID, goodsID int64, admission string) error {
	if sn.raffle {
		if sn.leftovers {
			return nil
		}
		return db.ErrNotDrawn
	}
	if !sn.queue {
		return nil
	}
	if admission == "" || !checkAdmission(s.powKey(), admission, goodsID, userID, s.Now()) {
		return db.ErrNotAdmitted
	}
	return nil
}

// RunPow calls SyncPow once a second until ctx ends.
func (s *Service) RunPow(ctx context.Context) { backend.Every(ctx, powSync, func() { s.SyncPow(ctx) }) }

// PowLevel is the level goods asks now, its shared raise read again
// (tests: the automatic raise).
func (s *Service) PowLevel(ctx context.Context, goodsID int64) int {
	f, _, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return 0
	}
	s.sync(ctx, goodsID, f, s.Now(), true)
	f.mu.Lock()
	defer f.mu.Unlock()
	return min(f.bits()+f.raise, MaxPowBits)
}

// Created opens a raffle's entries or a waiting room (their seed hash is published from now on).
func (s *Service) Created(ctx context.Context, g *model.Goods) error {
	switch g.Mode {
	case model.ModeRaffle:
		return s.Raffles.Open(ctx, g)
	case model.ModeQueue:
		return s.openRoom(ctx, g)
	}
	return nil
}

// Changed forgets the goods' settings read, so the next grab reads them
// again (and passes Check to read them).
func (s *Service) Changed(goodsID int64) {
	s.fair.forget(goodsID)
	s.quiet.Changed()
}
