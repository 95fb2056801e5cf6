package raffle_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/fair/raffle"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
)

// raffle creates raffle goods of stock whose entries open at entries and
// whose sale starts at start (both relative to now) and lasts an hour.
func (e *goodsEnv) raffle(stock int64, entries, start time.Duration) *model.Goods {
	e.T.Helper()
	sl := e.Slot(start, time.Hour)
	g, err := e.S.Create(e.Ctx, e.Merchant, goods.Input{SlotID: sl.ID, Title: "Sneakers", PriceCents: 20000, SeckillPriceCents: 9900,
		Stock: stock, LimitPerUser: 1, Mode: new(model.ModeRaffle), EntryStartAt: new(e.Clk.Now().Add(entries))})
	if err != nil {
		e.T.Fatal(err)
	}
	return g
}

// shoppers adds n shopper accounts (entries and notices refer to users) and returns their IDs.
func (e *goodsEnv) shoppers(n int) []int64 {
	e.T.Helper()
	ids := make([]int64, n)
	for i := range ids {
		err := e.S.SQL.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, '', ?, ?) RETURNING id`,
			fmt.Sprintf("shopper%d_%d", i, shopperSeq.Add(1)), model.RoleUser, time.Now().UnixMilli()).Scan(&ids[i])
		if err != nil {
			e.T.Fatal(err)
		}
	}
	return ids
}

var shopperSeq atomic.Int64

func (e *goodsEnv) enter(user, goodsID int64) *model.RaffleEntry {
	e.T.Helper()
	en, _, err := e.F.EnterRaffle(e.Ctx, user, goodsID, "")
	if err != nil {
		e.T.Fatalf("user %d enters raffle %d: %v", user, goodsID, err)
	}
	return en
}

func (e *goodsEnv) entry(user, goodsID int64) *model.RaffleEntry {
	e.T.Helper()
	en, err := e.F.RaffleEntry(e.Ctx, user, goodsID)
	if err != nil {
		e.T.Fatalf("entry of user %d in raffle %d: %v", user, goodsID, err)
	}
	return en
}

func (e *goodsEnv) draw(goodsID int64) *model.RaffleDraw {
	e.T.Helper()
	d, err := e.F.RaffleDraw(e.Ctx, goodsID)
	if err != nil {
		e.T.Fatal(err)
	}
	return d
}

// ordersOn lists the user's orders of the goods.
func (e *goodsEnv) ordersOn(user, goodsID int64) []model.Order {
	e.T.Helper()
	all, err := e.S.MyOrders(e.Ctx, user)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []model.Order
	for _, o := range all {
		if o.GoodsID == goodsID {
			out = append(out, o)
		}
	}
	return out
}

// 1,000 shoppers released at once, each sending its entry twice at the
// same moment: 1,000 entries, one new per shopper (the other request gets
// the same entry), and entering again later is the same entry, not a new one.
func TestRaffleEntriesRace(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.raffle(10, 0, 10*time.Minute)
	users := e.shoppers(1000)
	for round, wantCreated := range []bool{true, false} {
		start := make(chan struct{})
		var wg sync.WaitGroup
		var created, failed atomic.Int64
		for _, u := range append(users, users...) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				en, c, err := e.F.EnterRaffle(e.Ctx, u, g.ID, "")
				if err != nil || en.State != model.EntryEntered || en.GoodsID != g.ID {
					failed.Add(1)
					t.Errorf("round %d user %d: %+v %v", round, u, en, err)
					return
				}
				if c {
					created.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		want := int64(0)
		if wantCreated {
			want = 1000
		}
		if created.Load() != want || failed.Load() != 0 {
			t.Fatalf("round %d: %d new entries, %d failed; want %d, 0", round, created.Load(), failed.Load(), want)
		}
	}
	if d := e.draw(g.ID); d.Entries != 1000 || d.Seed != "" || d.Order != nil {
		t.Fatalf("draw before the start: %+v, want 1000 entries and no seed or order", d)
	}
	var rows, distinct int
	if err := e.S.SQL.R.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT user_id) FROM raffle_entries WHERE goods_id = ?`, g.ID).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != 1000 || distinct != 1000 {
		t.Fatalf("%d entry rows of %d shoppers, want 1000 of 1000", rows, distinct)
	}

	// The draw places all 1,000 (in chunks) and the first 10 win.
	e.Clk.Advance(10 * time.Minute)
	if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || !drawn {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	d := e.draw(g.ID)
	if !slices.Equal(d.Order, verify.DrawOrder(d.Randomness, users)) || d.Winners == nil || *d.Winners != 10 {
		t.Fatalf("draw of 1,000: %d in the order, winners %v; want DrawOrder's 1,000 and 10", len(d.Order), d.Winners)
	}
	for _, i := range []int{0, 9, 10, 499, 500, 999} {
		en, want := e.entry(d.Order[i], g.ID), model.EntryWaitlisted
		if i < 10 {
			want = model.EntryWon
		}
		if en.Position != int64(i+1) || en.State != want {
			t.Fatalf("entry %d of the order: %+v, want position %d %s", i, en, i+1, want)
		}
	}
}

// Entries only in their window, on raffle goods; a grab on raffle goods is
// refused not_drawn (from memory), and a raffle call on other goods conflict.
func TestRaffleWindowAndRefusals(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.raffle(1, 5*time.Minute, 10*time.Minute)
	u := e.shoppers(2)
	_, _, err := e.F.EnterRaffle(e.Ctx, u[0], g.ID, "")
	wantCode(t, "entry before the window", err, db.ENOTSTARTED)
	e.Clk.Advance(5 * time.Minute)
	if en, created, err := e.F.EnterRaffle(e.Ctx, u[0], g.ID, ""); err != nil || !created || en.State != model.EntryEntered {
		t.Fatalf("entry in the window: %+v %v %v", en, created, err)
	}
	_, err = e.GrabWith(u[1], g.ID, goods.Pass{})
	wantCode(t, "grab before the sale", err, db.ENOTDRAWN)
	e.Clk.Advance(5 * time.Minute)
	_, _, err = e.F.EnterRaffle(e.Ctx, u[1], g.ID, "")
	wantCode(t, "entry at the start", err, db.EENDED)
	if !strings.Contains(err.Error(), "closed") {
		t.Fatalf("the refusal %q does not say entries closed", err)
	}
	if en, created, err := e.F.EnterRaffle(e.Ctx, u[0], g.ID, ""); err != nil || created {
		t.Fatalf("entering again after the start: %+v %v %v, want the entry", en, created, err)
	}
	_, err = e.GrabWith(u[1], g.ID, goods.Pass{})
	wantCode(t, "grab during the sale", err, db.ENOTDRAWN)
	if st := e.Stats(g.ID); st.Unpaid != 0 || st.Remaining != 1 {
		t.Fatalf("refused grabs changed the sale: %+v", st)
	}

	plain := e.LiveGoods(5, 1)
	_, _, err = e.F.EnterRaffle(e.Ctx, u[0], plain.ID, "")
	wantCode(t, "entry on first-come goods", err, db.ECONFLICT)
	_, err = e.F.RaffleDraw(e.Ctx, plain.ID)
	wantCode(t, "draw of first-come goods", err, db.ECONFLICT)
	_, err = e.F.RaffleDraw(e.Ctx, 999999)
	wantCode(t, "draw of no goods", err, db.ENOTFOUND)
}

// The draw is made once (run twice, and by two workers at once), at the
// start and not before; its order is DrawOrder of the seed published
// beforehand and the entries, recomputed here with docs/FAIR_SALES.md's shell
// command; min(stock, entries) winners each get one unpaid order and an
// inbox notice, the rest are waitlisted.
func TestRaffleDraw(t *testing.T) {
	for _, c := range []struct{ stock, entries int64 }{{3, 10}, {5, 2}, {2, 0}} {
		t.Run(fmt.Sprintf("stock=%d,entries=%d", c.stock, c.entries), func(t *testing.T) {
			e := newGoodsEnv(t)
			g := e.raffle(c.stock, 0, 10*time.Minute)
			users := e.shoppers(int(c.entries))
			for _, u := range users {
				e.enter(u, g.ID)
			}
			before := e.draw(g.ID)
			if len(before.SeedHash) != 64 || before.Seed != "" || before.Entries != c.entries || before.Winners != nil {
				t.Fatalf("before the draw: %+v", before)
			}
			if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || drawn {
				t.Fatalf("draw before the start: %v %v, want no draw", drawn, err)
			}
			e.Clk.Advance(10 * time.Minute)
			other, _ := e.TwinFair()
			var draws atomic.Int64
			var wg sync.WaitGroup
			for _, s := range []*fair.Service{e.F, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					drawn, err := s.DrawRaffle(e.Ctx, g.ID)
					if err != nil {
						t.Errorf("draw: %v", err)
					}
					if drawn {
						draws.Add(1)
					}
				}()
			}
			wg.Wait()
			if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || drawn {
				t.Fatalf("draw again: %v %v", drawn, err)
			}
			if draws.Load() != 1 {
				t.Fatalf("%d draws, want 1", draws.Load())
			}
			d := e.draw(g.ID)
			if d.SeedHash != before.SeedHash || verify.SeedHash(d.Seed) != d.SeedHash {
				t.Fatalf("seed %q hashes to %s; published %s, now %s", d.Seed, verify.SeedHash(d.Seed), before.SeedHash, d.SeedHash)
			}
			winners := min(c.stock, c.entries)
			if d.Winners == nil || *d.Winners != winners || d.Entries != c.entries || len(d.Order) != int(c.entries) {
				t.Fatalf("draw %+v, want %d winners of %d entries", d, winners, c.entries)
			}
			if d.Status != model.DrawDrawn || d.EntriesRoot != verify.EntriesTree(g.ID, users).RootHex() || d.EntriesRoot != before.EntriesRoot && before.EntriesRoot != "" {
				t.Fatalf("draw %+v: want drawn, the root of the entries", d)
			}
			if d.Beacon != nil || d.BeaconRound != nil || d.Randomness != verify.Randomness(d.Seed, d.EntriesRoot, "") {
				t.Fatalf("randomness %s, beacon %v round %v: want SHA-256(seed:root), no beacon", d.Randomness, d.Beacon, d.BeaconRound)
			}
			if want := verify.DrawOrder(d.Randomness, users); !slices.Equal(d.Order, want) {
				t.Fatalf("order %v, DrawOrder gives %v", d.Order, want)
			}
			if shell := shellDrawOrder(t, d.Seed, d.EntriesRoot, "", users); shell != nil && !slices.Equal(d.Order, shell) {
				t.Fatalf("order %v, the shell command of docs/FAIR_SALES.md gives %v", d.Order, shell)
			}
			box := &inbox.Service{Backend: e.S.Backend}
			for i, u := range d.Order {
				en, os := e.entry(u, g.ID), e.ordersOn(u, g.ID)
				notes, err := box.List(e.Ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				if int64(i) < winners {
					if en.State != model.EntryWon || len(os) != 1 || os[0].Status != model.OrderUnpaid || en.OrderID != os[0].ID ||
						en.Position != int64(i+1) || len(notes) != 1 || notes[0].Kind != raffle.NotificationRaffleWon {
						t.Fatalf("winner %d: entry %+v, orders %+v, notices %+v", i, en, os, notes)
					}
				} else if en.State != model.EntryWaitlisted || len(os) != 0 || len(notes) != 0 {
					t.Fatalf("entry %d after the winners: %+v, orders %+v, notices %+v", i, en, os, notes)
				}
			}
			if st := e.Stats(g.ID); st.Unpaid != winners || st.Remaining != c.stock-winners {
				t.Fatalf("stats after the draw %+v, want %d unpaid", st, winners)
			}
			if err := e.F.SweepRaffles(e.Ctx); err != nil { // settles again: nothing new
				t.Fatal(err)
			}
			if st := e.Stats(g.ID); st.Unpaid != winners {
				t.Fatalf("a second settle made orders: %+v", st)
			}
		})
	}
}

// shellDrawOrder runs docs/FAIR_SALES.md's command (sha256sum, sort) on
// seed, the entries root and the entries' user IDs; nil when the machine
// has no bash or sha256sum.
func shellDrawOrder(t *testing.T, seed, root, beacon string, users []int64) []int64 {
	t.Helper()
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Log("no sha256sum: the shell recomputation is skipped")
		return nil
	}
	var ids strings.Builder
	for _, u := range users {
		fmt.Fprintln(&ids, u)
	}
	// The documented command, reading the IDs from stdin instead of jq.
	cmd := exec.Command("bash", "-c", `seed="$1"; root="$2"; beacon="$3"
r=$(printf '%s:%s%s' "$seed" "$root" "${beacon:+:$beacon}" | sha256sum | cut -d' ' -f1)
while read -r u; do
  printf '%s %s\n' "$(printf '%s:%s' "$r" "$u" | sha256sum | cut -d' ' -f1)" "$u"
done | LC_ALL=C sort | cut -d' ' -f2`, "draw", seed, root, beacon)
	cmd.Stdin = strings.NewReader(ids.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shell draw: %v", err)
	}
	order := []int64{}
	for _, f := range strings.Fields(string(out)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, n)
	}
	return order
}

// A unit whose order is cancelled, or expires (by the clock), passes to the
// next entry in the draw's order exactly once, however often (and however
// many at once) settle; the holder's entry is lost, the next one won with an
// order of its own and an inbox notice. When the order is exhausted the unit stays unsold.
func TestRafflePassOn(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.raffle(2, 0, 10*time.Minute)
	users := e.shoppers(4)
	for _, u := range users {
		e.enter(u, g.ID)
	}
	e.Clk.Advance(10 * time.Minute)
	if _, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	order := e.draw(g.ID).Order
	a, b, c, d := order[0], order[1], order[2], order[3]
	other, otherClk := e.TwinFair()
	settle := func() {
		t.Helper()
		otherClk.Set(e.Clk.Now())
		var wg sync.WaitGroup
		for _, s := range []*fair.Service{e.F, other, e.F} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.SweepRaffles(e.Ctx); err != nil {
					t.Errorf("settle: %v", err)
				}
			}()
		}
		wg.Wait()
	}

	// Making a winner's order again makes none and tells no one again.
	for range 2 {
		if err := e.F.MakeRaffleOrder(e.Ctx, g.ID, a, 0); err != nil {
			t.Fatal(err)
		}
	}
	box := &inbox.Service{Backend: e.S.Backend}
	if as := e.ordersOn(a, g.ID); len(as) != 1 {
		t.Fatalf("a's orders after making it again: %+v", as)
	}
	if notes, _ := box.List(e.Ctx, a); len(notes) != 1 {
		t.Fatalf("a's notices after making the order again: %+v", notes)
	}

	// a cancels: c gets the unit, once though the pass-on runs twice at once and settles run after.
	aOrder := e.entry(a, g.ID).OrderID
	if _, err := e.S.CancelOrder(e.Ctx, a, aOrder); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, s := range []*fair.Service{e.F, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.PassOn(e.Ctx, g.ID, a, aOrder); err != nil {
				t.Errorf("pass on: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := e.F.PassOn(e.Ctx, g.ID, a, aOrder); err != nil {
		t.Fatal(err)
	}
	if dr := e.draw(g.ID); dr.Passed != 1 || e.entry(d, g.ID).State != model.EntryWaitlisted {
		t.Fatalf("after the pass-on ran three times: %d passed on, d's entry %+v; want 1, d waitlisted", dr.Passed, e.entry(d, g.ID))
	}
	settle()
	settle()
	if en := e.entry(a, g.ID); en.State != model.EntryLost {
		t.Fatalf("a's entry after cancelling: %+v", en)
	}
	cs := e.ordersOn(c, g.ID)
	if en := e.entry(c, g.ID); en.State != model.EntryWon || len(cs) != 1 || cs[0].Status != model.OrderUnpaid || en.OrderID != cs[0].ID {
		t.Fatalf("c after a unit passed on: entry %+v, orders %+v", en, cs)
	}
	if _, err := e.S.PayOrder(e.Ctx, c, cs[0].ID); err != nil {
		t.Fatal(err)
	}

	// b's order expires by the clock: d gets the unit.
	e.Clk.Advance(e.S.OrderTTL + time.Second)
	if _, err := e.S.ExpireDue(e.Ctx); err != nil {
		t.Fatal(err)
	}
	settle()
	settle()
	if bs := e.ordersOn(b, g.ID); len(bs) != 1 || bs[0].Status != model.OrderExpired || e.entry(b, g.ID).State != model.EntryLost {
		t.Fatalf("b after expiry: orders %+v, entry %+v", bs, e.entry(b, g.ID))
	}
	ds := e.ordersOn(d, g.ID)
	if en := e.entry(d, g.ID); en.State != model.EntryWon || len(ds) != 1 || ds[0].Status != model.OrderUnpaid || en.OrderID != ds[0].ID {
		t.Fatalf("d after a unit passed on: entry %+v, orders %+v", en, ds)
	}
	if as, cs := e.ordersOn(a, g.ID), e.ordersOn(c, g.ID); len(as) != 1 || len(cs) != 1 || cs[0].Status != model.OrderPaid {
		t.Fatalf("a's orders %+v, c's %+v: one each", as, cs)
	}
	for _, u := range []int64{c, d} {
		if notes, _ := box.List(e.Ctx, u); len(notes) != 1 || !strings.Contains(notes[0].Message, "passed on to you") {
			t.Fatalf("user %d's notices %+v, want one: a unit passed on", u, notes)
		}
	}

	// d cancels too: the order is exhausted and the unit stays unsold.
	if _, err := e.S.CancelOrder(e.Ctx, d, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	settle()
	dr := e.draw(g.ID)
	if st := e.Stats(g.ID); dr.Passed != 2 || st.Remaining != 1 || st.Paid != 1 || st.Unpaid != 0 {
		t.Fatalf("after the order ran out: draw %+v, stats %+v; want 2 passed on, 1 paid, 1 unsold", dr, st)
	}
	rs, err := e.F.RaffleStats(e.Ctx, e.Merchant, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Won != 1 || rs.Paid != 1 || rs.Lost != 3 || rs.Waitlisted != 0 || rs.Draw.Passed != 2 {
		t.Fatalf("merchant's view %+v", rs)
	}
}
