package fair

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/sale"
	"github.com/seckill/seckill/db/model"
)

// Fair sales, the part before the grab: a goods' proof of work (pow.go)
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

// Automatic raise of the proof of work while a goods is under attack: per
// process, over windows of PowWindow, a window with at least
// powAttackRefusals refusals (no proof, a bad proof, not pre-registered,
// the limit reached) and at least powAttackRatio refusals per admitted
// grab raises the bits by 2 (up to powRaiseCap above the merchant's, and
// MaxPowBits); a window below that lowers them by 2 until back at the
// merchant's. Goods without a proof of work (pow_bits 0) are left alone.
const (
	PowWindow         = 10 * time.Second
	powAttackRefusals = 20
	powAttackRatio    = 10
	powRaiseCap       = 8
	fairRefresh       = time.Second
)

// powKey marks a proof of work as used until its challenge expires.
func powKey(goodsID int64, nonce string) string { return sale.HashTag(goodsID) + ":pow:" + nonce }

// fairGoods is one goods' fair-sale settings and this process's count of
// its refusals and admissions in the current window.
type fairGoods struct {
	// snap is the settings as last read, read without a lock (nil: read them).
	snap atomic.Pointer[fairSnap]

	mu       sync.Mutex // the attack measure's
	window   time.Time  // the current window's start
	refused  int
	admitted int
	raise    int // bits added while under attack
}

// fairSnap is one read of a goods' fair-sale settings.
type fairSnap struct {
	read   time.Time
	found  bool
	bits   int // the merchant's pow_bits
	prereg bool
	queue  bool // sold through a waiting room: a grab needs an admission (queue_token.go)
	raffle bool // sold by a draw: a grab is refused (raffle.go)
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

// level is the bits asked now: the merchant's plus the raise, after
// closing the windows that ended. The caller holds f.mu.
func (f *fairGoods) level(now time.Time) int {
	bits := f.bits()
	if bits == 0 {
		return 0
	}
	if f.window.IsZero() || now.Before(f.window) {
		f.window = now
	}
	for now.Sub(f.window) >= PowWindow {
		if f.refused >= powAttackRefusals && f.refused >= powAttackRatio*max(f.admitted, 1) {
			f.raise = min(f.raise+2, powRaiseCap, MaxPowBits-bits)
		} else {
			f.raise = max(f.raise-2, 0)
		}
		f.refused, f.admitted = 0, 0
		f.window = f.window.Add(PowWindow)
		if f.raise == 0 && now.Sub(f.window) >= PowWindow { // quiet: skip the empty windows
			f.window = now
		}
	}
	return min(bits+f.raise, MaxPowBits)
}

// count records one grab's outcome for the attack measure.
func (f *fairGoods) count(now time.Time, admitted bool) {
	if f.bits() == 0 { // no proof of work: nothing to measure
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.level(now)
	if admitted {
		f.admitted++
	} else {
		f.refused++
	}
}

func (s *Service) powKey() []byte { return s.PowKey }

// randomHex is n random bytes in lowercase hex: the waiting room's and the raffle's seeds.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// randomKey is a process's own proof-of-work key, until Main sets the server's.
func randomKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// PowChallenge returns a proof-of-work challenge for a grab of goods (its
// bits 0 when the goods asks for none); not found for goods shoppers cannot see.
func (s *Service) PowChallenge(ctx context.Context, goodsID int64) (*Challenge, error) {
	if goodsID <= 0 || goodsID > sale.MaxID {
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
	f.mu.Lock()
	bits := f.level(now)
	f.mu.Unlock()
	c := newChallenge(s.powKey(), goodsID, bits, now.Add(PowTTL))
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
	if goodsID <= 0 || goodsID > sale.MaxID {
		return nil // the grab answers not found
	}
	f, sn, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return err
	}
	return s.admit(ctx, f, sn, userID, goodsID, pow)
}

// admit is Admit with the goods' settings read: the proof of work (pow_bits
// > 0) and the pre-registration; a goods with neither costs nothing more.
func (s *Service) admit(ctx context.Context, f *fairGoods, sn *fairSnap, userID, goodsID int64, pow string) error {
	bits, prereg := sn.bits, sn.prereg
	if bits == 0 && !prereg {
		return nil
	}
	now := s.Now()
	if bits > 0 {
		if pow == "" {
			f.count(now, false)
			return db.ErrPowRequired
		}
		sol, ok := checkPow(s.powKey(), pow, goodsID, now)
		if !ok {
			f.count(now, false)
			return db.ErrPowInvalid
		}
		if prereg {
			if err := s.preregistered(ctx, f, userID, goodsID, now); err != nil {
				return err
			}
		}
		// Kept until the challenge expires by the wall clock (plus a
		// margin for clocks that differ): by then checkPow refuses it anyway.
		ttl := time.Until(sol.expires) + time.Minute
		fresh, err := s.Redis.SetNX(ctx, powKey(goodsID, sol.nonce), userID, max(ttl, time.Minute)).Result()
		if err != nil {
			return err
		}
		if !fresh {
			f.count(now, false)
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
		f.count(now, false)
		return notPreregistered
	}
	return nil
}

// Pass is the sale's Gate (db/goods/sale): a grab passes Admit first, and
// of queued goods carries a valid admission (X-Admission). A raffle's goods
// is refused (not_drawn) from the settings in memory: its units go to the
// draw's winners. The goods' settings are read once (from memory,
// lock-free) for the sale mode, the proof of work and the pre-registration.
func (s *Service) Pass(ctx context.Context, userID, goodsID int64, p sale.Pass) (done func(error), err error) {
	f, sn, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	if err := s.checkSaleMode(sn, userID, goodsID, p.Admission); err != nil {
		return nil, err
	}
	s.queues.grabs.Add(1)
	if err := s.admit(ctx, f, sn, userID, goodsID, p.Pow); err != nil {
		return nil, err
	}
	start := s.Now()
	return func(err error) {
		if err == nil || db.ErrorCode(err) == db.ELIMITREACHED {
			f.count(s.Now(), err == nil)
		}
		if sn.queue { // the waiting room's health and used admissions (queue_outflow.go)
			s.grabDone(goodsID, userID, p.Admission, start, err)
		}
	}, nil
}

// notSoldBy refuses a call of one sale mode's (a queue join, a raffle
// entry, their merchant views) on goods sold in another: 409 conflict.
func notSoldBy(g *model.Goods, mode string) error {
	if g.Mode == mode {
		return nil
	}
	how := map[string]string{model.ModeQueue: "through a waiting room", model.ModeRaffle: "by a raffle"}[mode]
	return db.Errorf(db.ECONFLICT, "goods %d is not sold %s (its mode is %s)", g.ID, how, g.Mode)
}

// PowLevel is the bits this process asks of goods now (tests: the automatic raise).
func (s *Service) PowLevel(goodsID int64) int {
	f := s.fair.get(goodsID)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.level(s.Now())
}

// Created opens a raffle's entries or a waiting room (their seed hash is published from now on).
func (s *Service) Created(ctx context.Context, g *model.Goods) error {
	switch g.Mode {
	case model.ModeRaffle:
		return s.openRaffle(ctx, g)
	case model.ModeQueue:
		return s.openRoom(ctx, g)
	}
	return nil
}

// Changed forgets the goods' settings read, so the next grab reads them again.
func (s *Service) Changed(goodsID int64) { s.fair.forget(goodsID) }
