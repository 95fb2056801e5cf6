package fair_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/seckill/seckill/db/fair"
)

// The room's seed is committed at the goods' creation: its SHA-256 is
// public before anyone joins, the seed only once the pre-queue is shuffled,
// the shuffle is that seed's (every ticket's place is QueuePlace of it), and
// a Redis that lost the room shuffles it with the same seed again.
func TestQueueRoomCommitment(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute)
	room, err := e.F.QueueRoom(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(room.SeedHash) != 64 || room.Started || room.Seed != "" || room.Joined != 0 {
		t.Fatalf("at creation: %+v, want a seed hash only", room)
	}
	const early = 50
	for u := int64(1); u <= early; u++ {
		e.join(u, g.ID)
	}
	if r, _ := e.F.QueueRoom(e.Ctx, g.ID); r.SeedHash != room.SeedHash || r.Joined != early || r.Seed != "" {
		t.Fatalf("before the start: %+v, want the same hash, %d joined, no seed", r, early)
	}
	e.Clk.Advance(time.Minute)
	e.join(early+1, g.ID) // after the start: behind the shuffled
	after, err := e.F.QueueRoom(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(after.Seed))
	if !after.Started || after.Joined != early || hex.EncodeToString(sum[:]) != room.SeedHash {
		t.Fatalf("after the start: %+v, want started, %d joined and the seed of hash %s", after, early, room.SeedHash)
	}
	places := map[int64]int64{}
	for u := int64(1); u <= early+1; u++ {
		tk := e.ticket(u, g.ID)
		want := fair.QueuePlace(after.Seed, after.Joined, tk.JoinNumber-1) + 1
		if tk.JoinNumber != u || tk.Place != want || tk.Position != tk.Place {
			t.Fatalf("user %d: %+v, want join number %d and place %d (the seed's)", u, tk, u, want)
		}
		places[u] = tk.Place
	}

	// Redis loses the room, but not the store: the same early shoppers
	// joining in the same order are shuffled alike.
	g2 := e.queueGoods(10, 1, time.Minute)
	for u := int64(1); u <= early; u++ {
		e.join(u, g2.ID)
	}
	if err := e.S.Redis.FlushDB(e.Ctx).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := fairOver(e.S.Backend) // a process that never read the seed
	fresh.PowKey = e.F.PowKey      // the server's secret, as every process of one server has
	for u := int64(1); u <= early; u++ {
		if _, _, err := fresh.JoinQueue(e.Ctx, u, g2.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := fresh.QueueRoom(e.Ctx, g2.ID)
	e.Clk.Advance(time.Minute)
	r2, err := fresh.QueueRoom(e.Ctx, g2.ID)
	if err != nil {
		t.Fatal(err)
	}
	sum = sha256.Sum256([]byte(r2.Seed))
	if !r2.Started || hex.EncodeToString(sum[:]) != before.SeedHash {
		t.Fatalf("after Redis lost the room: %+v, want the seed committed before (%s)", r2, before.SeedHash)
	}
}
