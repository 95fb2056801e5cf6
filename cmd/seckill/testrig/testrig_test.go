package testrig_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/testrig"
)

// The rig as another package's tests use it: a process, a merchant's sale
// and a crowd released at once over HTTP; the sale sells its stock, no more.
func TestRigSellsTheStock(t *testing.T) {
	a := testrig.Start(t)
	merchant, _ := a.NewMerchant()
	const stock, crowd = 3, 12
	goods := a.NewSale(merchant, stock, 1)
	tokens := make([]string, crowd)
	for i := range tokens {
		tokens[i], _ = a.NewUser()
	}
	statuses := make([]int, crowd)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			statuses[i] = a.Call("POST", fmt.Sprintf("/api/goods/%d/grab", goods), tok, nil, nil)
		}()
	}
	start.Done()
	wg.Wait()
	won := map[int]int{}
	for _, st := range statuses {
		won[st]++
	}
	if won[201] != stock || won[409] != crowd-stock {
		t.Fatalf("a crowd of %d grabbing %d units: answers %v, want %d × 201 and %d × 409", crowd, stock, won, stock, crowd-stock)
	}
	// A grab without an account is refused with the contract's error.
	a.WantError("POST", fmt.Sprintf("/api/goods/%d/grab", goods), "", nil, 401, "unauthorized")
}

// A held clock stands however long the test takes, moves when advanced,
// and runs on from where it stood: never back, never by the time held.
func TestClockHoldStandsThenRunsOn(t *testing.T) {
	var c testrig.Clock
	c.Advance(time.Hour)
	resume := c.Hold()
	held := c.Now()
	time.Sleep(20 * time.Millisecond)
	if got := c.Now(); !got.Equal(held) {
		t.Fatalf("a held clock moved by %s", got.Sub(held))
	}
	c.Advance(time.Minute)
	held = held.Add(time.Minute)
	before := time.Now()
	resume()
	got := c.Now()
	if ran := time.Since(before); got.Before(held) || got.Sub(held) > ran {
		t.Fatalf("resumed at %s past where it stood, want 0 to %s", got.Sub(held), ran)
	}
	c.Freeze()
	frozen := c.Now()
	c.Hold()()
	time.Sleep(time.Millisecond)
	if got := c.Now(); !got.Equal(frozen) || !c.Frozen() {
		t.Fatalf("a hold of a frozen clock let it run: moved %s, frozen %v", got.Sub(frozen), c.Frozen())
	}
}
