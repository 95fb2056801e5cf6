package account

import "testing"

// A read of the store that began before a pick's drop is not kept: the
// memory never holds a pick older than one announced.
func TestLocalesKeepNoReadOlderThanADrop(t *testing.T) {
	l := NewLocales(nil, nil)
	gen := l.gen.Load() // a read begins
	l.drop(7)           // the pick's message arrives meanwhile
	l.keep(7, "en", gen)
	if _, ok := l.m.Load(int64(7)); ok {
		t.Fatal("a read older than the drop was kept")
	}
	gen = l.gen.Load()
	l.keep(7, "zh-CN", gen)
	if v, ok := l.m.Load(int64(7)); !ok || v != "zh-CN" {
		t.Fatalf("a read after the drop: kept %v %v, want zh-CN", v, ok)
	}
	l.dropAll()
	if _, ok := l.m.Load(int64(7)); ok || l.held.Load() != 0 {
		t.Fatal("dropAll left a pick")
	}
}
