package sale

import (
	"slices"
	"testing"

	"github.com/seckill/seckill/db/rdb"
)

// The scripts' KEYS order is a contract with the Lua; the keys cut from one
// string must equal the ones each named key function builds.
func TestGoodsScriptKeys(t *testing.T) {
	b := Bucket0(42)
	got := ScriptKeys(b, "extra")
	want := []string{"{goods:42}:info", "{goods:42}:fresh", "{goods:42}:free", "{goods:42}:held", "{goods:42}:seq",
		"{goods:42}:orders", "{goods:42}:mine", "{goods:42}:deadlines", "{goods:42}:pending", "{goods:42}:counts", "extra"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys\n got %q\nwant %q", got, want)
	}
	named := []string{InfoKey(b), FreshKey(b), FreeKey(b), got[3], got[4], OrdersKey(b),
		MineKey(b), DeadlinesKey(b), FlushQueue(b).Pending, CountsKey(b)}
	if !slices.Equal(got[:10], named) {
		t.Fatalf("script keys %q differ from the named keys %q", got[:10], named)
	}
	if n := len(ScriptKeys(Bucket0(7))); n != 10 {
		t.Fatalf("%d keys without extras", n)
	}
}

// Bucket 0 keeps {goods:ID}; the buckets of K = 3 lie in three different
// thirds of the slot space (three nodes of an evenly split three-node
// cluster), for any goods; the tags depend on the goods, bucket and K alone.
func TestBucketTags(t *testing.T) {
	for id := int64(1); id <= 500; id++ {
		bs := BucketsOf(id, 3)
		if bs[0].Tag() != HashTag(id) {
			t.Fatalf("goods %d: bucket 0 tag %q", id, bs[0].Tag())
		}
		thirds := map[int]bool{}
		for _, b := range bs {
			tg := b.Tag()
			thirds[rdb.Slot(tg[1:len(tg)-1])*3/rdb.ClusterSlots] = true
		}
		if len(thirds) != 3 {
			t.Fatalf("goods %d: buckets %v fall in %d thirds of the slots", id, bs, len(thirds))
		}
	}
	if rdb.Slot("123456789") != 0x31C3%rdb.ClusterSlots {
		t.Fatalf("CRC16 of the check string: %#x", rdb.Slot("123456789"))
	}
}

// Stock splits into K ranges that cover 1..stock once.
func TestBucketSizes(t *testing.T) {
	for _, k := range []int{1, 2, 3, 8} {
		for _, stock := range []int64{1, 2, 7, 100, 1001} {
			next := int64(0)
			for b := range k {
				n, base := bucketSize(stock, b, k)
				if base != next {
					t.Fatalf("stock %d k %d bucket %d: base %d, want %d", stock, k, b, base, next)
				}
				next += n
			}
			if next != stock {
				t.Fatalf("stock %d k %d: buckets hold %d", stock, k, next)
			}
		}
	}
}
