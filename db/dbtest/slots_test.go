package dbtest

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/rdb"
)

// Slots agree with CLUSTER KEYSLOT, hash tags included.
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{
		"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{goods:42}:stock": 15647,
		"seckill:goods:active": 15581, "a{}b": 13694, "{}{x}": 3257, "{x": 11068,
	} {
		if got := rdb.Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

// errorsTB records what the guard reports instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (e *errorsTB) Errorf(format string, args ...any) { e.errs = append(e.errs, format) }

// The guard lets commands and scripts of one slot through, and refuses
// (and reports) one naming keys of two slots, alone or in a pipeline.
func TestSlotGuard(t *testing.T) {
	ctx := context.Background()
	r, err := rdb.Open(ctx, RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := &errorsTB{TB: t}
	GuardSlots(rec, r.Client)
	if err := r.Client.Del(ctx, "{a}:x", "{a}:y").Err(); err != nil {
		t.Fatalf("one slot: %v", err)
	}
	if err := r.Client.Eval(ctx, "return 1", []string{"{a}:x", "{a}:y"}).Err(); err != nil {
		t.Fatalf("script of one slot: %v", err)
	}
	if err := r.Client.Set(ctx, "seckill:goods:active", 1, 0).Err(); err != nil {
		t.Fatalf("one key: %v", err)
	}
	if err := r.Client.Del(ctx, "{a}:x", "{b}:x").Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("DEL over two slots: %v, want CROSSSLOT", err)
	}
	pipe := r.Client.Pipeline()
	pipe.Get(ctx, "{a}:x")
	pipe.Eval(ctx, "return 1", []string{"{a}:x", "{goods:1}:info"})
	if _, err := pipe.Exec(ctx); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("pipelined script over two slots: %v, want CROSSSLOT", err)
	}
	if len(rec.errs) != 2 {
		t.Fatalf("guard reported %d times, want 2", len(rec.errs))
	}
}
