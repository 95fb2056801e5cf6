package ratelimit

import (
	"context"

	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rate
		bad  bool
	}{
		{"10/s", Rate{10, time.Second}, false},
		{"10/m", Rate{10, time.Minute}, false},
		{"300/s", Rate{300, time.Second}, false},
		{"0", Rate{}, false},
		{"0/s", Rate{0, time.Second}, false},
		{"10", Rate{}, true},
		{"10/h", Rate{}, true},
		{"-1/s", Rate{}, true},
		{"x/s", Rate{}, true},
		{"", Rate{}, true},
	} {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v, bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
	if !(Rate{0, time.Second}).Off() || (Rate{1, time.Second}).Off() {
		t.Error("Off: want 0/s off and 1/s on")
	}
}

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.t.Load()) }
func (c *clock) add(d time.Duration) { c.t.Add(int64(d)) }
func newClock() *clock {
	c := &clock{}
	c.t.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func allowN(l *Limiter[int64], k int64, n int) (ok int) {
	for range n {
		if a, _ := l.Allow(k); a {
			ok++
		}
	}
	return ok
}

func TestLimiterBurstThenRefill(t *testing.T) {
	c := newClock()
	l := New[int64](Rate{10, time.Second}, c.now)
	if got := allowN(l, 1, 50); got != 10 {
		t.Fatalf("burst: %d allowed, want 10", got)
	}
	ok, wait := l.Allow(1)
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("empty bucket: ok=%v wait=%s, want refused with wait ≤ 100ms", ok, wait)
	}
	if got := allowN(l, 2, 10); got != 10 {
		t.Fatalf("another key has its own bucket: %d allowed, want 10", got)
	}
	c.add(500 * time.Millisecond)
	if got := allowN(l, 1, 50); got != 5 {
		t.Fatalf("after half a second: %d allowed, want 5", got)
	}
	c.add(time.Hour)
	if got := allowN(l, 1, 50); got != 10 {
		t.Fatalf("refill stops at the burst: %d allowed, want 10", got)
	}
}

func TestLimiterPerMinute(t *testing.T) {
	c := newClock()
	l := New[int64](Rate{10, time.Minute}, c.now)
	if got := allowN(l, 1, 20); got != 10 {
		t.Fatalf("burst: %d, want 10", got)
	}
	_, wait := l.Allow(1)
	if wait < 5*time.Second || wait > 6*time.Second {
		t.Fatalf("wait %s, want ≈6s for one token of 10/m", wait)
	}
}

func TestLimiterShareDividesAmongProcesses(t *testing.T) {
	c := newClock()
	procs := []*Limiter[int64]{New[int64](Rate{10, time.Second}, c.now), New[int64](Rate{10, time.Second}, c.now)}
	for _, p := range procs {
		p.SetShare(2)
	}
	total := 0
	for sec := 0; sec < 10; sec++ {
		for _, p := range procs {
			total += allowN(p, 7, 100)
		}
		c.add(time.Second)
	}
	// Ten seconds of 10/s across two processes: the first burst (10) plus 9 seconds of refill (90).
	if total != 100 {
		t.Fatalf("two processes with share 2 allowed %d in 10s, want 100 (the limit in total)", total)
	}
}

func TestLimiterOffAllowsAll(t *testing.T) {
	l := New[int64](Rate{}, nil)
	if got := allowN(l, 1, 1000); got != 1000 {
		t.Fatalf("off: %d of 1000", got)
	}
	if l.Len() != 0 {
		t.Fatalf("off limiter keeps %d keys", l.Len())
	}
}

func TestLimiterConcurrentHonoursBurst(t *testing.T) {
	c := newClock()
	l := New[int64](Rate{10, time.Second}, c.now)
	var allowed atomic.Int64
	var start, done sync.WaitGroup
	start.Add(1)
	for i := 0; i < 500; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			if ok, _ := l.Allow(int64(i % 5)); ok {
				allowed.Add(1)
			}
		}()
	}
	start.Done()
	done.Wait()
	if got := allowed.Load(); got != 50 {
		t.Fatalf("500 concurrent grabs by 5 shoppers: %d allowed, want 5×10", got)
	}
}

func TestLimiterMemoryStaysBounded(t *testing.T) {
	c := newClock()
	l := New[int64](Rate{10, time.Second}, c.now)
	for k := int64(0); k < 3*maxKeys*int64(len(l.shards)); k++ {
		l.Allow(k)
		if k%1000 == 0 {
			c.add(2 * time.Second) // earlier keys' buckets are full again
		}
	}
	if n := l.Len(); n > maxKeys*len(l.shards) {
		t.Fatalf("%d keys held, want ≤ %d", n, maxKeys*len(l.shards))
	}
}

func TestMembersCountLiveProcesses(t *testing.T) {
	ctx := context.Background()
	r, err := rdb.Open(ctx, dbtest.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := newClock()
	a := NewMembers(r.Client, "a", 5*time.Second, c.now)
	b := NewMembers(r.Client, "b", 5*time.Second, c.now)
	var seen atomic.Int64
	a.OnCount = func(n int) { seen.Store(int64(n)) }
	if n, err := a.Beat(ctx); err != nil || n != 1 {
		t.Fatalf("one process: %d, %v", n, err)
	}
	if n, _ := b.Beat(ctx); n != 2 {
		t.Fatalf("two processes: %d", n)
	}
	a.Beat(ctx)
	if seen.Load() != 2 {
		t.Fatalf("OnCount saw %d, want 2", seen.Load())
	}
	c.add(16 * time.Second) // b falls silent for more than three beats
	if n, _ := a.Beat(ctx); n != 1 {
		t.Fatalf("after b went silent: %d, want 1", n)
	}
}
