package goods

import (
	"slices"
	"testing"
)

// The scripts' KEYS order is a contract with the Lua; the keys cut from one
// string must equal the ones each named key function builds.
func TestGoodsScriptKeys(t *testing.T) {
	got := scriptKeys(42, "extra")
	want := []string{"{goods:42}:info", "{goods:42}:fresh", "{goods:42}:free", "{goods:42}:held", "{goods:42}:seq",
		"{goods:42}:orders", "{goods:42}:mine", "{goods:42}:deadlines", "{goods:42}:pending", "{goods:42}:counts", "extra"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys\n got %q\nwant %q", got, want)
	}
	named := []string{infoKey(42), freshKey(42), freeKey(42), got[3], got[4], ordersKey(42),
		mineKey(42), deadlinesKey(42), flushQueue(42).Pending, countsKey(42)}
	if !slices.Equal(got[:10], named) {
		t.Fatalf("script keys %q differ from the named keys %q", got[:10], named)
	}
	if n := len(scriptKeys(7)); n != 10 {
		t.Fatalf("%d keys without extras", n)
	}
}
