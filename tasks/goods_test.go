package tasks

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
)

// errNotDue stands for the goods service's refusal of an expiry before its deadline.
var errNotDue = db.Errorf(db.ECONFLICT, "the order is not due to expire yet")

type fakeGoodsStore struct {
	expired []int64
	synced  []int64
	ticks   int
	err     error
}

func (f *fakeGoodsStore) ExpireOrder(_ context.Context, id int64) error {
	f.expired = append(f.expired, id)
	return f.err
}
func (f *fakeGoodsStore) Preheat(context.Context) (int, error) { return 0, f.err }
func (f *fakeGoodsStore) SyncStock(_ context.Context, slot int64) error {
	f.synced = append(f.synced, slot)
	return f.err
}
func (f *fakeGoodsStore) ExpireDue(context.Context) (int, error) {
	f.ticks++
	return 2, f.err
}

func TestGoodsHandlers(t *testing.T) {
	store := &fakeGoodsStore{}
	g := &Goods{Store: store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	mux := asynq.NewServeMux()
	g.Register(mux)
	ctx := context.Background()

	const order = 3_000_000_009 // goods 3, sequence 9
	if err := mux.ProcessTask(ctx, NewOrderExpireTask(order)); err != nil || len(store.expired) != 1 || store.expired[0] != order {
		t.Fatalf("expire: %v %v", err, store.expired)
	}
	// The expiry tick, and a sweep task an earlier release left queued, both expire what is due.
	if err := mux.ProcessTask(ctx, NewOrderExpireDueTask()); err != nil || store.ticks != 1 {
		t.Fatalf("expiry tick: %v, %d ticks", err, store.ticks)
	}
	if err := mux.ProcessTask(ctx, asynq.NewTask(TypeOrderSweep, nil)); err != nil || store.ticks != 2 {
		t.Fatalf("old sweep task: %v, %d ticks", err, store.ticks)
	}
	if err := mux.ProcessTask(ctx, NewGoodsSyncTask(7)); err != nil || len(store.synced) != 1 || store.synced[0] != 7 {
		t.Fatalf("sync: %v %v", err, store.synced)
	}
	for _, bad := range []*asynq.Task{
		asynq.NewTask(TypeOrderExpire, []byte("{")),
		asynq.NewTask(TypeOrderExpire, []byte(`{"order_id": 0}`)),
		asynq.NewTask(TypeGoodsSync, []byte(`{"slot_id": "x"}`)),
	} {
		if err := mux.ProcessTask(ctx, bad); !errors.Is(err, asynq.SkipRetry) {
			t.Errorf("%s %q: %v, want SkipRetry", bad.Type(), bad.Payload(), err)
		}
	}
	// An expiry that is not due yet fails so that Asynq retries it.
	store.err = errNotDue
	if err := mux.ProcessTask(ctx, NewOrderExpireTask(order+1)); !errors.Is(err, errNotDue) {
		t.Fatalf("not due: %v", err)
	}
	p := g.Periodic()
	if len(p) != 3 {
		t.Fatalf("periodic tasks %d, want preheat, sync and the expiry tick", len(p))
	}
	if p[2].Task.Type() != TypeOrderExpireDue || p[2].Spec != "@every 1s" {
		t.Fatalf("expiry tick %s on %q, want %s every second", p[2].Task.Type(), p[2].Spec, TypeOrderExpireDue)
	}
}
