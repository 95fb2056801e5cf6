package db

import (
	"slices"
	"testing"
)

// The scripts' KEYS order is a contract with the Lua; the keys cut from one
// string must equal the ones each named key function builds.
func TestGoodsScriptKeys(t *testing.T) {
	got := goodsScriptKeys(42, "extra")
	want := []string{"{goods:42}:info", "{goods:42}:fresh", "{goods:42}:free", "{goods:42}:held", "{goods:42}:seq",
		"{goods:42}:orders", "{goods:42}:mine", "{goods:42}:deadlines", "{goods:42}:pending", "{goods:42}:counts", "extra"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys\n got %q\nwant %q", got, want)
	}
	named := []string{goodsInfoKey(42), goodsFreshKey(42), goodsFreeKey(42), got[3], got[4], goodsOrdersKey(42),
		goodsMineKey(42), goodsDeadlinesKey(42), goodsQueue(42).Pending, goodsCountsKey(42)}
	if !slices.Equal(got[:10], named) {
		t.Fatalf("script keys %q differ from the named keys %q", got[:10], named)
	}
	if n := len(goodsScriptKeys(7)); n != 10 {
		t.Fatalf("%d keys without extras", n)
	}
}
