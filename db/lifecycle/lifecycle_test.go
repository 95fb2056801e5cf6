package lifecycle_test

import (
	"context"
	"testing"

	"github.com/seckill/seckill/db/lifecycle"
)

// A loop's Stop returns only once the loop drained what it held, and a
// stopped loop does not start again.
func TestStopDrains(t *testing.T) {
	in := make(chan int, 10)
	var got []int
	l := lifecycle.New("drain", func(ctx context.Context) {
		for {
			select {
			case n := <-in:
				got = append(got, n)
			case <-ctx.Done():
				for {
					select {
					case n := <-in:
						got = append(got, n)
					default:
						return
					}
				}
			}
		}
	})
	l.Start()
	l.Start() // runs once
	for i := range 10 {
		in <- i
	}
	l.Stop()
	if len(got) != 10 { // read after Stop: the loop has returned
		t.Fatalf("drained %d of 10 before Stop returned", len(got))
	}
	l.Stop()
	l.Start()
	in <- 1
	if len(in) != 1 {
		t.Fatal("a stopped loop started again")
	}
}

// Stop of a loop never started returns at once.
func TestStopNeverStarted(t *testing.T) {
	ran := false
	l := lifecycle.New("idle", func(context.Context) { ran = true })
	lifecycle.Loops{l}.Stop()
	l.Start()
	if ran {
		t.Fatal("a loop stopped before its start ran")
	}
}
