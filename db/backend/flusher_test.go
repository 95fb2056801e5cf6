package backend_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
)

// The Flusher runs every registered step under the flush lease, each
// interval while started, with the work after each interval flush, and once
// more when stopped (a clean shutdown leaves nothing behind); Run runs the
// steps once and not the work after.
func TestFlusherRunsRegisteredSteps(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	f := backend.NewFlusher(b, time.Hour) // no tick during the test: only Run and Stop flush
	var steps, leased, after atomic.Int64
	f.Register(func(ctx context.Context) error {
		steps.Add(1)
		if r.Client.Exists(ctx, backend.FlushLeaseKey).Val() == 1 {
			leased.Add(1)
		}
		return nil
	})
	f.Register(func(ctx context.Context) error { steps.Add(1); return nil })
	f.AfterEach(func(ctx context.Context) error { after.Add(1); return nil })

	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if steps.Load() != 2 || leased.Load() != 1 || after.Load() != 0 {
		t.Fatalf("Run: %d steps run (want 2), %d under the lease (want 1), %d after (want 0)", steps.Load(), leased.Load(), after.Load())
	}
	f.Start()
	f.Stop()
	if steps.Load() != 4 || leased.Load() != 2 {
		t.Fatalf("Stop: %d steps run in all (want 4: a last flush), %d under the lease (want 2)", steps.Load(), leased.Load())
	}
	f.Stop() // stopping twice does nothing

	ticking := backend.NewFlusher(b, 10*time.Millisecond)
	ticked := make(chan struct{}, 1)
	ticking.AfterEach(func(ctx context.Context) error {
		select {
		case ticked <- struct{}{}:
		default:
		}
		return nil
	})
	ticking.Start()
	defer ticking.Stop()
	select {
	case <-ticked:
	case <-time.After(30 * time.Second):
		t.Fatal("no interval flush within 30s of a 10ms interval")
	}
}
