package goods_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods"
)

// New goods of several buckets never read one bucket's stock: a process
// that looked at the goods before any process loaded it into Redis reads
// the sum of every bucket once it is loaded, at once.
func TestNewShardedGoodsReadWholeStock(t *testing.T) {
	const stock, k = 10, 2
	e := newGoodsEnvK(t, k)
	g := e.Goods(e.Slot(72*time.Hour, time.Hour), stock, 1) // far off: not preheated at creation
	other := goods.New(e.S.Backend)                         // another web process over the same Redis and store
	before, err := other.Get(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Remaining != stock {
		t.Fatalf("before the load: remaining %d, want %d", before.Remaining, stock)
	}
	if _, err := e.S.Load(e.Ctx, g); err != nil { // this process preheats it
		t.Fatal(err)
	}
	if n := e.Remaining(g.ID); n != stock {
		t.Fatalf("the loading process reads remaining %d, want %d", n, stock)
	}
	after, err := other.Get(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Remaining != stock {
		t.Fatalf("the other process reads remaining %d after the load, want the whole stock %d", after.Remaining, stock)
	}
}
