package raffle_test

import (
	"database/sql"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair/beacontest"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/model"
)

// The seed is sealed in the store until the draw: the row holds no plain
// seed, a server with another secret cannot open it (and so cannot draw),
// and the draw reveals the seed whose hash was published.
func TestRaffleSeedSealed(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.raffle(1, 0, 10*time.Minute)
	users := e.shoppers(3)
	for _, u := range users {
		e.enter(u, g.ID)
	}
	var seed string
	var sealed sql.NullString
	if err := e.S.SQL.R.QueryRow(`SELECT seed, seed_sealed FROM raffles WHERE goods_id = ?`, g.ID).Scan(&seed, &sealed); err != nil {
		t.Fatal(err)
	}
	if seed != "" || !sealed.Valid || len(sealed.String) < 64 {
		t.Fatalf("before the draw the store holds seed %q, sealed %v: want no plain seed, a sealed one", seed, sealed)
	}
	e.Clk.Advance(10 * time.Minute)
	other, _ := e.TwinFair()
	other.PowKey = []byte("another server's secret")
	if drawn, err := other.DrawRaffle(e.Ctx, g.ID); err == nil || drawn || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("draw by a server with another secret: %v %v, want the seed not opening", drawn, err)
	}
	if d := e.draw(g.ID); d.Status != model.DrawClosed || d.Seed != "" {
		t.Fatalf("after a failed draw: %+v, want closed, no seed", d)
	}
	if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || !drawn {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	d := e.draw(g.ID)
	if len(d.Seed) != 64 || verify.SeedHash(d.Seed) != d.SeedHash || strings.Contains(sealed.String, d.Seed) {
		t.Fatalf("revealed seed %q hashes to %s, published %s", d.Seed, verify.SeedHash(d.Seed), d.SeedHash)
	}
}

// When entries close the root of their tree is frozen, once: the answer
// carries it (before the draw, with no seed), each entry's proof reaches
// it, an entry from a process whose clock is behind is refused after it,
// and the draw keeps it.
func TestRaffleEntriesRoot(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.raffle(2, 0, 10*time.Minute)
	users := e.shoppers(6)
	for _, u := range users[:5] {
		e.enter(u, g.ID)
	}
	if d, en := e.draw(g.ID), e.entry(users[0], g.ID); d.Status != model.DrawOpen || d.EntriesRoot != "" || en.Inclusion != nil {
		t.Fatalf("while open: draw %+v, entry %+v: want no root, no proof", d, en)
	}
	behind, _ := e.TwinFair() // its clock stays before the start
	e.Clk.Advance(10 * time.Minute)
	d := e.draw(g.ID)
	want := verify.EntriesTree(g.ID, users[:5]).RootHex()
	if d.Status != model.DrawClosed || d.EntriesRoot != want || d.Seed != "" || d.Order != nil {
		t.Fatalf("after the close: %+v, want closed with root %s and no seed", d, want)
	}
	if _, _, err := behind.EnterRaffle(e.Ctx, users[5], g.ID, ""); db.ErrorCode(err) != db.EENDED {
		t.Fatalf("an entry after the root was frozen: %v, want ended", err)
	}
	for _, u := range users[:5] {
		en := e.entry(u, g.ID)
		leaf := verify.EntryLeaf(g.ID, u)
		if en.Inclusion == nil || en.Leaf != hex.EncodeToString(leaf[:]) || !verify.VerifyProof(en.Leaf, en.Proof, d.EntriesRoot) {
			t.Fatalf("user %d's entry %+v does not prove it is in root %s", u, en, d.EntriesRoot)
		}
	}
	if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || !drawn {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	after := e.draw(g.ID)
	if after.EntriesRoot != want || after.Entries != 5 || !slices.Equal(after.Order, verify.DrawOrder(verify.Randomness(after.Seed, want, ""), users[:5])) {
		t.Fatalf("after the draw: %+v, want root %s and the order of its randomness", after, want)
	}
}

// With a beacon the round first published after the close is named when
// the raffle opens; the draw waits (and says so) until the round is out,
// then mixes its randomness in.
func TestRaffleBeacon(t *testing.T) {
	e := newGoodsEnv(t)
	b := beacontest.New(t, e.Clk.Now().Add(-time.Hour), 3*time.Second)
	e.F.Beacon = &verify.Beacon{URL: b.URL, Backoff: time.Millisecond}
	g := e.raffle(1, 0, 10*time.Minute)
	round := (g.StartAt.Unix()-b.Genesis)/b.Period + 2
	users := e.shoppers(4)
	for _, u := range users {
		e.enter(u, g.ID)
	}
	if d := e.draw(g.ID); d.BeaconRound == nil || *d.BeaconRound != round || d.Beacon != nil || d.Status != model.DrawOpen {
		t.Fatalf("before the close: %+v, want beacon round %d named", d, round)
	}
	due := time.Unix(b.Genesis+(round-1)*b.Period, 0)
	if !due.After(g.StartAt) || !due.Add(-time.Duration(b.Period)*time.Second).Before(g.StartAt.Add(time.Second)) {
		t.Fatalf("round %d is due at %s: not the first after the close at %s", round, due, g.StartAt)
	}

	e.Clk.Set(g.StartAt)
	b.Publish(round - 1) // everything before the close is out: no use
	if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || drawn {
		t.Fatalf("draw before the round is due: %v %v, want a wait", drawn, err)
	}
	if b.Fetched(round) != 0 {
		t.Fatalf("round %d asked for %d times before it was due", round, b.Fetched(round))
	}
	e.Clk.Set(due.Add(time.Second))
	if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || drawn {
		t.Fatalf("draw before the round is out: %v %v, want a wait", drawn, err)
	}
	if n := b.Fetched(round); n != 3 {
		t.Fatalf("round %d asked %d times, want 3 tries", round, n)
	}
	d := e.draw(g.ID)
	if d.Status != model.DrawWaitingBeacon || d.EntriesRoot == "" || d.Seed != "" || d.Beacon != nil {
		t.Fatalf("waiting for the beacon: %+v", d)
	}
	if err := e.F.SweepRaffles(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if d := e.draw(g.ID); d.Status != model.DrawWaitingBeacon {
		t.Fatalf("the sweep drew without the beacon: %+v", d)
	}

	b.Publish(round)
	if err := e.F.SweepRaffles(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if drawn, err := e.F.DrawRaffle(e.Ctx, g.ID); err != nil || drawn {
		t.Fatalf("draw after the sweep drew: %v %v, want none", drawn, err)
	}
	d = e.draw(g.ID)
	if d.Status != model.DrawDrawn || d.Beacon == nil || *d.Beacon != beacontest.Randomness(round) || *d.BeaconRound != round {
		t.Fatalf("drawn: %+v, want beacon round %d's randomness", d, round)
	}
	if d.Randomness != verify.Randomness(d.Seed, d.EntriesRoot, *d.Beacon) || !slices.Equal(d.Order, verify.DrawOrder(d.Randomness, users)) {
		t.Fatalf("randomness %s, order %v: not of seed, root and beacon", d.Randomness, d.Order)
	}
	if shell := shellDrawOrder(t, d.Seed, d.EntriesRoot, *d.Beacon, users); shell != nil && !slices.Equal(d.Order, shell) {
		t.Fatalf("order %v, the documented command gives %v", d.Order, shell)
	}
}
