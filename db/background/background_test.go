package background_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/db/background"
)

// Hundreds of goroutines submitting while Close runs: no panic, and every
// job runs exactly once, on the pool before Close returns or in its caller.
func TestBackgroundGoDuringClose(t *testing.T) {
	const submitters, each = 300, 4
	b := background.New(4, 16)
	var ran atomic.Int64
	job := func() { ran.Add(1) }
	start := make(chan struct{})
	var wg, firstHalf sync.WaitGroup // Close starts once half the submitters have submitted once
	firstHalf.Add(submitters / 2)
	for i := 0; i < submitters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < each; j++ {
				b.Go(job)
				if j == 0 && i < submitters/2 {
					firstHalf.Done()
				}
			}
		}()
	}
	closed := make(chan struct{})
	go func() {
		<-start
		firstHalf.Wait()
		b.Close()
		close(closed)
	}()
	close(start)
	wg.Wait()
	<-closed
	// After Close has returned every job must run in its caller.
	for j := 0; j < each; j++ {
		b.Go(job)
	}
	b.Close() // a second Close is harmless
	if got, want := ran.Load(), int64((submitters+1)*each); got != want {
		t.Fatalf("%d jobs ran, want %d (one per Go)", got, want)
	}
}
