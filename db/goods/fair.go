package goods

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/seckill/seckill/db"
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
func powKey(goodsID int64, nonce string) string { return hashTag(goodsID) + ":pow:" + nonce }

// fairGoods is one goods' fair-sale settings and this process's count of
// its refusals and admissions in the current window.
type fairGoods struct {
	mu       sync.Mutex
	read     time.Time // when the settings were read (zero: never)
	found    bool
	bits     int // the merchant's pow_bits
	prereg   bool
	window   time.Time // the current window's start
	refused  int
	admitted int
	raise    int // bits added while under attack
}

type fairCache struct {
	mu sync.Mutex
	m  map[int64]*fairGoods
}

func newFairCache() *fairCache { return &fairCache{m: map[int64]*fairGoods{}} }

func (c *fairCache) get(id int64) *fairGoods {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.m[id]
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
	f := c.get(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.read = time.Time{}
}

// settings returns the goods' fair-sale settings, read at most once per fairRefresh.
func (s *Service) fairSettings(ctx context.Context, goodsID int64) (*fairGoods, error) {
	f := s.fair.get(goodsID)
	now := s.Now()
	f.mu.Lock()
	fresh := !f.read.IsZero() && now.Sub(f.read) < fairRefresh && !now.Before(f.read)
	f.mu.Unlock()
	if fresh {
		return f, nil
	}
	g, err := s.goodsRow(ctx, goodsID)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case db.ErrorCode(err) == db.ENOTFOUND:
		f.found, f.bits, f.prereg = false, 0, false
	case err != nil:
		if !f.read.IsZero() { // the store is away: go on with what was read last
			return f, nil
		}
		return nil, err
	default:
		f.found, f.bits, f.prereg = true, g.PowBits, g.PreregisteredOnly
	}
	f.read = now
	return f, nil
}

// level is the bits asked now: the merchant's plus the raise, after
// closing the windows that ended. The caller holds f.mu.
func (f *fairGoods) level(now time.Time) int {
	if f.bits == 0 {
		return 0
	}
	if f.window.IsZero() || now.Before(f.window) {
		f.window = now
	}
	for now.Sub(f.window) >= PowWindow {
		if f.refused >= powAttackRefusals && f.refused >= powAttackRatio*max(f.admitted, 1) {
			f.raise = min(f.raise+2, powRaiseCap, MaxPowBits-f.bits)
		} else {
			f.raise = max(f.raise-2, 0)
		}
		f.refused, f.admitted = 0, 0
		f.window = f.window.Add(PowWindow)
		if f.raise == 0 && now.Sub(f.window) >= PowWindow { // quiet: skip the empty windows
			f.window = now
		}
	}
	return min(f.bits+f.raise, MaxPowBits)
}

// count records one grab's outcome for the attack measure.
func (f *fairGoods) count(now time.Time, admitted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bits == 0 {
		return
	}
	f.level(now)
	if admitted {
		f.admitted++
	} else {
		f.refused++
	}
}

func (s *Service) powKey() []byte { return s.PowKey }

// randomKey is a process's own proof-of-work key, until Main sets the server's.
func randomKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// PowChallenge returns a proof-of-work challenge for a grab of goods (its
// bits 0 when the goods asks for none); not found for goods shoppers cannot see.
func (s *Service) PowChallenge(ctx context.Context, goodsID int64) (*Challenge, error) {
	if goodsID <= 0 || goodsID > MaxID {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	f, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	if !f.found {
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
	if goodsID <= 0 || goodsID > MaxID {
		return nil // the grab answers not found
	}
	f, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return err
	}
	f.mu.Lock()
	bits, prereg := f.bits, f.prereg
	f.mu.Unlock()
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
	b, err := s.reminders().Bits(ctx, userID, goodsID)
	if err != nil {
		return err
	}
	if b == 0 {
		f.count(now, false)
		return notPreregistered
	}
	return nil
}

// GrabFair is a grab that passes Admit first: what POST /api/goods/{id}/grab does.
func (s *Service) GrabFair(ctx context.Context, userID, goodsID int64, pow string) (*model.Order, error) {
	if err := s.Admit(ctx, userID, goodsID, pow); err != nil {
		return nil, err
	}
	o, err := s.Grab(ctx, userID, goodsID)
	if err == nil || db.ErrorCode(err) == db.ELIMITREACHED {
		s.fair.get(goodsID).count(s.Now(), err == nil)
	}
	return o, err
}

// PowLevel is the bits this process asks of goods now (tests: the automatic raise).
func (s *Service) PowLevel(goodsID int64) int {
	f := s.fair.get(goodsID)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.level(s.Now())
}
