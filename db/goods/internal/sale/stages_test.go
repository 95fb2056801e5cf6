package sale

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
)

// quietStage is an admission stage that refuses grabs of goods it is told
// to, counts its checks and marks the goods it lets on quiet for ttl from
// the test's clock, as settings read now and trusted for ttl.
type quietStage struct {
	q       *Quiet
	checks  atomic.Int64
	refuse  atomic.Bool
	clock   *time.Time
	ttl     time.Duration
	between func() // called between the generation's read and the mark (nil: nothing)
}

func (st *quietStage) Quiet() *Quiet { return st.q }

func (st *quietStage) Check(_ context.Context, g Grab) (func(Outcome), error) {
	st.checks.Add(1)
	if st.refuse.Load() {
		return nil, db.ErrPowRequired
	}
	gen := st.q.Gen()
	if st.between != nil {
		st.between()
	}
	st.q.Mark(g.Goods, gen, *st.clock, st.clock.Add(st.ttl))
	return nil, nil
}

// newStagedSale is a sale over a fresh Redis and store built with stage,
// its clock at *now, with goods 1 of 100 units (10 a shopper) on sale.
func newStagedSale(t *testing.T, stage Stage, now *time.Time) *Sale {
	t.Helper()
	b := backend.New(dbtest.DB(t), dbtest.Redis(t).Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	b.Now = func() time.Time { return *now }
	s := NewSale(b, stage)
	g := &model.Goods{ID: 1, SlotID: 1, SeckillPriceCents: 100, Stock: 100, LimitPerUser: 10,
		StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour), State: model.SlotLive}
	if _, err := s.Load(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	return s
}

// A stage that marks goods quiet is passed by for their grabs while the
// mark holds: from its settings' read until its end, and until the stage
// tells a change. Every grab is counted as admitted, the ones the stage
// never saw too; a grab the stage refuses is not.
func TestQuietStageIsPassedBy(t *testing.T) {
	now := time.Now()
	st := &quietStage{q: new(Quiet), clock: &now, ttl: time.Second}
	s := newStagedSale(t, st, &now)
	ctx := context.Background()
	grab := func(user int64) {
		t.Helper()
		if o := s.Decide(ctx, []Grab{{User: user, Goods: 1}})[0]; o.Err != nil {
			t.Fatalf("grab of user %d: %v", user, o.Err)
		}
	}
	checks := func(want int64, what string) {
		t.Helper()
		if n := st.checks.Load(); n != want {
			t.Fatalf("%s: the stage checked %d grabs, want %d", what, n, want)
		}
	}
	grab(1)
	checks(1, "the first grab")
	for u := int64(2); u < 12; u++ {
		grab(u)
	}
	checks(1, "ten grabs while quiet")
	if n := s.Admitted(); n != 11 {
		t.Fatalf("admitted %d grabs, want 11", n)
	}

	now = now.Add(time.Second) // the mark's end
	grab(12)
	checks(2, "a grab at the mark's end")
	grab(13)
	checks(2, "a grab after the stage marked again")

	st.q.Changed() // the stage's settings changed: it refuses from now on
	st.refuse.Store(true)
	if o := s.Decide(ctx, []Grab{{User: 14, Goods: 1}})[0]; o.Err != db.ErrPowRequired {
		t.Fatalf("a grab after the stage changed: %v, want its refusal", o.Err)
	}
	checks(3, "a grab after the change")
	if n := s.Admitted(); n != 13 {
		t.Fatalf("admitted %d grabs after a refusal, want 13", n)
	}

	// A clock set back before the settings' read trusts no mark.
	st.refuse.Store(false)
	grab(15)
	checks(4, "a grab marking again")
	now = now.Add(-time.Millisecond)
	grab(16)
	checks(5, "a grab before the settings' read")
}

// A mark made from settings read before a change is never taken: the
// change holds from the stage's next grab on.
func TestQuietMarkOlderThanAChangeIsNotTaken(t *testing.T) {
	now := time.Now()
	st := &quietStage{q: new(Quiet), clock: &now, ttl: time.Hour}
	st.between = func() { st.q.Changed() } // a change lands while the stage reads its settings
	s := newStagedSale(t, st, &now)
	ctx := context.Background()
	for u := int64(1); u <= 3; u++ {
		if o := s.Decide(ctx, []Grab{{User: u, Goods: 1}})[0]; o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	if n := st.checks.Load(); n != 3 {
		t.Fatalf("the stage checked %d of 3 grabs: a mark older than a change was taken", n)
	}
}

// Goods a stage has not marked, and goods marked by another stage, are
// checked by it.
func TestQuietIsPerGoodsAndStage(t *testing.T) {
	now := time.Now()
	q := new(Quiet)
	q.Mark(2, q.Gen(), now, now.Add(time.Hour))
	if q.quiet(1, now) {
		t.Fatal("goods 1 quiet when only goods 2 was marked")
	}
	if !q.quiet(2, now) || new(Quiet).quiet(2, now) {
		t.Fatal("a mark is not the marking stage's alone")
	}
}
