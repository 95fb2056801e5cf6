package dbtest

import (
	"context"
	"sync"

	"github.com/seckill/seckill/db/backend"
)

// HeldFlusher stands the flushes run under Ctx still after they take their
// first batch (backend.BatchTaken): the flusher then holds the lane's lease,
// its fencing number and the batch, as one does when Redis restarts or its
// process pauses. Held is closed once it stands there; Release lets it go on.
type HeldFlusher struct {
	Ctx     context.Context
	Held    <-chan struct{}
	Release func()
}

// HoldFlusher returns ctx under which the first batch a flush takes is held.
func HoldFlusher(ctx context.Context) *HeldFlusher {
	held, release := make(chan struct{}), make(chan struct{})
	var first, let sync.Once
	h := &HeldFlusher{Held: held, Release: func() { let.Do(func() { close(release) }) }}
	h.Ctx = backend.BatchTaken(ctx, func([]string) {
		first.Do(func() {
			close(held)
			<-release
		})
	})
	return h
}
