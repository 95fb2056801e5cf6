package backend_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
)

// A keyed write runs once per key, user and op: a retry answers its value
// or its refusal again without running; invalid input, or an answer that
// says nothing of what happened, is not kept; no key, another key, user or
// op runs afresh.
func TestKeyed(t *testing.T) {
	b := backend.New(nil, dbtest.Redis(t).Client)
	ctx := context.Background()
	type thing struct {
		N int `json:"n"`
	}
	runs := 0
	count := func(context.Context) (*thing, error) { runs++; return &thing{N: runs}, nil }
	call := func(ctx context.Context, op string, user int64, w func(context.Context) (*thing, error)) (*thing, bool, error) {
		t.Helper()
		return backend.Keyed(ctx, b, op, user, w)
	}

	keyed := db.WithIdempotencyKey(ctx, "k1")
	for i, want := range []struct {
		replayed bool
		runs     int
	}{{false, 1}, {true, 1}, {true, 1}} {
		v, replayed, err := call(keyed, "op", 7, count)
		if err != nil || v.N != 1 || replayed != want.replayed || runs != want.runs {
			t.Fatalf("call %d: %+v replayed %v err %v after %d runs, want n 1 replayed %v after %d", i, v, replayed, err, runs, want.replayed, want.runs)
		}
	}
	for name, c := range map[string]context.Context{"no key": ctx, "another key": db.WithIdempotencyKey(ctx, "k2")} {
		before := runs
		if _, replayed, _ := call(c, "op", 7, count); replayed || runs != before+1 {
			t.Fatalf("%s: replayed %v, ran %d times", name, replayed, runs-before)
		}
	}
	if _, replayed, _ := call(keyed, "op", 8, count); replayed {
		t.Fatal("another user's same key replayed")
	}
	if _, replayed, _ := call(keyed, "other", 7, count); replayed {
		t.Fatal("another op's same key replayed")
	}

	// A refusal is the first answer too.
	conflict := func(context.Context) (*thing, error) { return nil, db.Errorf(db.ECONFLICT, "taken") }
	call(keyed, "conflict", 7, conflict)
	if _, replayed, err := call(keyed, "conflict", 7, count); !replayed || db.ErrorCode(err) != db.ECONFLICT || db.ErrorMessage(err) != "taken" {
		t.Fatalf("replayed conflict: %v replayed %v", err, replayed)
	}

	// Invalid input, or an unknown outcome, runs again.
	for _, e := range []error{db.FieldErrorf("reason", "must be 1–200 characters"), errors.New("boom"), db.ErrUnavailable, db.ErrRateLimited} {
		lost := func(context.Context) (*thing, error) { return nil, e }
		call(keyed, "lost "+e.Error(), 7, lost)
		if v, replayed, err := call(keyed, "lost "+e.Error(), 7, count); replayed || err != nil || v == nil {
			t.Fatalf("after %v: %+v replayed %v err %v, want a fresh run", e, v, replayed, err)
		}
	}
}
