package rdb

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A pipeliner whose lanes never started answers at Close every command that
// waits, queued or waiting for room in the full queue, with
// ErrPipelinerClosed: none is sent, and none is left blocked.
func TestPipelinerCloseAnswersUnsent(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: no lane sends
	defer c.Close()
	p := NewPipeliner(c, 1)
	const n = MaxPipeline + 44 // more than the queue holds
	errs := make(chan error, n)
	for range n {
		go func() { errs <- p.Client().Set(context.Background(), "k", "v", 0).Err() }()
	}
	for len(p.reqs) < cap(p.reqs) { // the queue is full: the rest wait for room
		runtime.Gosched()
	}
	p.Close()
	for range n {
		if err := <-errs; !errors.Is(err, ErrPipelinerClosed) {
			t.Fatalf("a command waiting at Close got %v, want ErrPipelinerClosed", err)
		}
	}
}
