package groupcommit

import (
	"context"
	"fmt"
	"testing"
)

// double is a batch function with next to no work of its own, so the
// benchmarks measure what the group adds to a call.
func double(_ context.Context, _ int, batch []int) ([]int, error) {
	out := make([]int, len(batch))
	for i, v := range batch {
		out[i] = 2 * v
	}
	return out, nil
}

// BenchmarkDirect calls the batch function itself, one item a call.
func BenchmarkDirect(b *testing.B) {
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if r, _ := double(ctx, 0, []int{i}); r[0] != 2*i {
			b.Fatal(r)
		}
	}
}

// BenchmarkDoLone calls Do from one goroutine: each call is a lone batch.
func BenchmarkDoLone(b *testing.B) {
	ctx := context.Background()
	g := New(double, Options{MaxBatch: 32, InFlight: 2})
	for i := 0; b.Loop(); i++ {
		if r, _ := g.Do(ctx, 0, i); r != 2*i {
			b.Fatal(r)
		}
	}
}

// BenchmarkDoParallel calls Do from many goroutines on one key and on
// many keys.
func BenchmarkDoParallel(b *testing.B) {
	for _, keys := range []int{1, 1024} {
		b.Run(fmt.Sprint(keys, " keys"), func(b *testing.B) {
			ctx := context.Background()
			g := New(double, Options{MaxBatch: 32, InFlight: 2})
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if r, _ := g.Do(ctx, i%keys, i); r != 2*i {
						b.Error(r)
						return
					}
				}
			})
		})
	}
}
