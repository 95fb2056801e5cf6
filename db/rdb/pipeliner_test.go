package rdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// incrBy adds ARGV[1] to KEYS[1] and returns the new value.
var incrBy = redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)

// Concurrent calls through the pipeliner each get their own answer, and every
// call is applied exactly once, including the first ones before Redis knows the script.
func TestPipelinerAnswersEachCall(t *testing.T) {
	r := dbtest.Redis(t)
	p := rdb.NewPipeliner(r.Client, 4)
	p.Loops().Start()
	defer p.Close()
	ctx := context.Background()
	const workers, each = 200, 20
	seen := make([]map[int64]bool, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		seen[w] = map[int64]bool{}
		go func(w int) {
			defer wg.Done()
			<-start
			for i := 0; i < each; i++ {
				v, err := incrBy.Run(ctx, p.Client(), []string{"{p}:n"}, 1).Int64()
				if err != nil {
					t.Error(err)
					return
				}
				seen[w][v] = true
			}
		}(w)
	}
	close(start)
	wg.Wait()
	all := map[int64]bool{}
	for _, s := range seen {
		for v := range s {
			if all[v] {
				t.Fatalf("value %d answered twice", v)
			}
			all[v] = true
		}
	}
	if got := r.Client.Get(ctx, "{p}:n").Val(); got != fmt.Sprint(workers*each) || len(all) != workers*each {
		t.Fatalf("counter %s with %d distinct answers, want %d", got, len(all), workers*each)
	}
}

func BenchmarkScriptDirect(b *testing.B) {
	r := dbtest.Redis(b)
	ctx := context.Background()
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			incrBy.Run(ctx, r.Client, []string{"{b}:n"}, 1)
		}
	})
}

func BenchmarkScriptPipelined(b *testing.B) {
	r := dbtest.Redis(b)
	p := rdb.NewPipeliner(r.Client, 4)
	p.Loops().Start()
	defer p.Close()
	ctx := context.Background()
	b.SetParallelism(64)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			incrBy.Run(ctx, p.Client(), []string{"{b}:n"}, 1)
		}
	})
}

// A command after Close is refused with an error, never a panic or a hang.
func TestPipelinerAfterClose(t *testing.T) {
	r := dbtest.Redis(t)
	p := rdb.NewPipeliner(r.Client, 2)
	p.Loops().Start()
	ctx := context.Background()
	if err := p.Client().Set(ctx, "{p}:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
	if err := p.Client().Get(ctx, "{p}:k").Err(); !errors.Is(err, rdb.ErrPipelinerClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// Stopping the lanes in the middle of a spike, as Main's Close does, leaves
// no caller waiting: each command is answered, with its reply or with
// ErrPipelinerClosed, and exactly those answered with a reply are applied.
func TestPipelinerStopDrains(t *testing.T) {
	r := dbtest.Redis(t)
	p := rdb.NewPipeliner(r.Client, 4)
	p.Loops().Start()
	defer p.Close()
	ctx := context.Background()
	const workers = 200
	var applied atomic.Int64
	answered := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				err := p.Client().Incr(ctx, "{p}:n").Err()
				if errors.Is(err, rdb.ErrPipelinerClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				applied.Add(1)
				select {
				case answered <- struct{}{}:
				default:
				}
			}
		}()
	}
	<-answered
	p.Loops().Stop()
	wg.Wait() // a caller left waiting hangs here
	got, err := r.Client.Get(ctx, "{p}:n").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if got != applied.Load() {
		t.Fatalf("counter %d, want the %d commands answered with a reply", got, applied.Load())
	}
}
