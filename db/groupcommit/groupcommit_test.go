package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// probe is a batch function that answers each item with its key and
// itself, and records what the invariants are stated on: the calls in
// flight per key (and their most), and every batch's items.
type probe struct {
	mu          sync.Mutex
	inFlight    map[string]int
	maxInFlight map[string]int
	batches     map[string][][]int
}

func newProbe() *probe {
	return &probe{inFlight: map[string]int{}, maxInFlight: map[string]int{}, batches: map[string][][]int{}}
}

func (p *probe) run(_ context.Context, key string, batch []int) ([]string, error) {
	p.mu.Lock()
	p.inFlight[key]++
	p.maxInFlight[key] = max(p.maxInFlight[key], p.inFlight[key])
	p.batches[key] = append(p.batches[key], slices.Clone(batch))
	p.mu.Unlock()
	runtime.Gosched() // let other callers arrive while this call is in flight
	out := make([]string, len(batch))
	for i, item := range batch {
		out[i] = answerOf(key, item)
	}
	p.mu.Lock()
	p.inFlight[key]--
	p.mu.Unlock()
	return out, nil
}

func answerOf(key string, item int) string { return fmt.Sprintf("%s/%d", key, item) }

// keysHeld is how many keys the group keeps state for.
func keysHeld[K comparable, T, R any](g *Group[K, T, R]) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.keys)
}

// waitQueued waits until n items of key are queued (behind its batches in flight).
func waitQueued[K comparable, T, R any](t *testing.T, g *Group[K, T, R], key K, n int) {
	t.Helper()
	for {
		g.mu.Lock()
		got := 0
		if st := g.keys[key]; st != nil {
			got = len(st.waiting)
		}
		g.mu.Unlock()
		if got == n {
			return
		}
		if got > n {
			t.Fatalf("%d items queued, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// Hundreds of callers released at once on one key, and across many keys,
// each get their own answer; no key ever has more than InFlight calls in
// flight nor a batch above MaxBatch; every item is decided exactly once;
// and once all callers returned the group holds no key.
func TestConcurrentCallers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		keys, perKey int
		opt          Options
	}{
		{"one key", 1, 600, Options{MaxBatch: 32, InFlight: 2}},
		{"one key one in flight", 1, 400, Options{MaxBatch: 7, InFlight: 1}},
		{"many keys", 60, 10, Options{MaxBatch: 4, InFlight: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProbe()
			g := New(p.run, tc.opt)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for k := range tc.keys {
				for i := range tc.perKey {
					wg.Add(1)
					go func() {
						defer wg.Done()
						key := fmt.Sprint("k", k)
						<-start
						got, err := g.Do(context.Background(), key, i)
						if want := answerOf(key, i); err != nil || got != want {
							t.Errorf("Do(%s, %d) = %q, %v; want %q, nil", key, i, got, err, want)
						}
					}()
				}
			}
			close(start)
			wg.Wait()

			if n := keysHeld(g); n != 0 {
				t.Errorf("the group holds %d keys after every caller returned, want 0", n)
			}
			if len(p.batches) != tc.keys {
				t.Errorf("%d keys ran batches, want %d", len(p.batches), tc.keys)
			}
			largest := 0
			for key, batches := range p.batches {
				if m := p.maxInFlight[key]; m > tc.opt.InFlight {
					t.Errorf("key %s had %d calls in flight at once, want at most %d", key, m, tc.opt.InFlight)
				}
				var items []int
				for _, b := range batches {
					if len(b) > tc.opt.MaxBatch {
						t.Errorf("key %s ran a batch of %d items, want at most %d", key, len(b), tc.opt.MaxBatch)
					}
					largest = max(largest, len(b))
					items = append(items, b...)
				}
				slices.Sort(items)
				if want := seq(tc.perKey); !slices.Equal(items, want) {
					t.Errorf("key %s decided items %v, want each of %v once", key, items, want)
				}
			}
			t.Logf("%d batches, the largest of %d items", countBatches(p), largest)
		})
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func countBatches(p *probe) int {
	n := 0
	for _, b := range p.batches {
		n += len(b)
	}
	return n
}

// blocker is a batch function whose calls each wait for a release, so a
// test can hold a batch in flight while others queue.
type blocker struct {
	entered chan []int    // each call's items, as it starts
	release chan struct{} // one receive per call
	err     error         // answers every call when set
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan []int, 100), release: make(chan struct{})}
}

func (b *blocker) run(_ context.Context, key string, batch []int) ([]string, error) {
	b.entered <- slices.Clone(batch)
	<-b.release
	if b.err != nil {
		return nil, b.err
	}
	out := make([]string, len(batch))
	for i, item := range batch {
		out[i] = answerOf(key, item)
	}
	return out, nil
}

type result struct {
	v   string
	err error
}

func doAsync(g *Group[string, int, string], ctx context.Context, key string, item int) chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := g.Do(ctx, key, item)
		ch <- result{v, err}
	}()
	return ch
}

// While a key's batch is in flight its next callers queue, then go in
// batches of at most MaxBatch in arrival order, one after the other.
func TestBatchesGatherWhileInFlight(t *testing.T) {
	b := newBlocker()
	g := New(b.run, Options{MaxBatch: 4, InFlight: 1})
	first := doAsync(g, context.Background(), "k", 0)
	if got := <-b.entered; !slices.Equal(got, []int{0}) {
		t.Fatalf("first batch %v, want [0]", got)
	}
	var rest []chan result
	for i := 1; i <= 10; i++ {
		rest = append(rest, doAsync(g, context.Background(), "k", i))
		waitQueued(t, g, "k", i) // one at a time, so the order is known
	}
	want := [][]int{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}}
	b.release <- struct{}{}
	for _, w := range want {
		if got := <-b.entered; !slices.Equal(got, w) {
			t.Fatalf("batch %v, want %v", got, w)
		}
		b.release <- struct{}{}
	}
	for i, ch := range append([]chan result{first}, rest...) {
		if r := <-ch; r.err != nil || r.v != answerOf("k", i) {
			t.Errorf("caller %d got %q, %v; want %q", i, r.v, r.err, answerOf("k", i))
		}
	}
	if n := keysHeld(g); n != 0 {
		t.Errorf("the group holds %d keys, want 0", n)
	}
}

// A lone caller runs its batch at once, on its own goroutine: nothing
// waits for company. And a caller that finds fewer than InFlight batches of
// its key running starts one at once beside them.
func TestLoneCallerIsNotHeldBack(t *testing.T) {
	var calls atomic.Int64
	g := New(func(_ context.Context, key string, batch []int) ([]string, error) {
		calls.Add(1)
		return []string{answerOf(key, batch[0])}, nil
	}, Options{MaxBatch: 32, InFlight: 1})
	if got, err := g.Do(context.Background(), "k", 7); err != nil || got != "k/7" {
		t.Fatalf("Do = %q, %v; want k/7", got, err)
	}
	if calls.Load() != 1 || keysHeld(g) != 0 {
		t.Fatalf("after a lone Do: %d calls, %d keys held; want 1 and 0", calls.Load(), keysHeld(g))
	}

	b := newBlocker()
	g2 := New(b.run, Options{MaxBatch: 32, InFlight: 2})
	held := doAsync(g2, context.Background(), "k", 1)
	<-b.entered // one batch of k in flight, held
	second := doAsync(g2, context.Background(), "k", 2)
	if got := <-b.entered; !slices.Equal(got, []int{2}) { // started beside it, not queued
		t.Fatalf("second batch %v, want [2]", got)
	}
	b.release <- struct{}{}
	b.release <- struct{}{}
	for i, ch := range []chan result{held, second} {
		if r := <-ch; r.err != nil || r.v != answerOf("k", i+1) {
			t.Errorf("caller %d got %q, %v", i+1, r.v, r.err)
		}
	}
}

// failAll holds one batch of key k in flight, queues n callers behind it,
// then lets every batch fail (or panic): it returns each caller's error,
// the first's at 0.
func failAll(t *testing.T, n int, fail func() error) []error {
	t.Helper()
	b := newBlocker()
	g := New(func(ctx context.Context, key string, batch []int) ([]string, error) {
		b.run(ctx, key, batch)
		return nil, fail()
	}, Options{MaxBatch: 8, InFlight: 1})
	chs := []chan result{doAsync(g, context.Background(), "k", 0)}
	<-b.entered
	for i := 1; i <= n; i++ {
		chs = append(chs, doAsync(g, context.Background(), "k", i))
	}
	waitQueued(t, g, "k", n)
	go func() {
		for range b.entered { // the first batch, then batches of 8
			b.release <- struct{}{}
		}
	}()
	b.release <- struct{}{}
	errs := make([]error, len(chs))
	for i, ch := range chs {
		errs[i] = (<-ch).err
	}
	close(b.entered)
	if n := keysHeld(g); n != 0 {
		t.Errorf("the group holds %d keys after the batches failed, want 0", n)
	}
	return errs
}

// A failing batch answers each of its callers with its error, and the key
// goes on working.
func TestFailingBatchAnswersEveryCaller(t *testing.T) {
	boom := errors.New("boom")
	for i, err := range failAll(t, 100, func() error { return boom }) {
		if !errors.Is(err, boom) {
			t.Errorf("caller %d got error %v, want %v", i, err, boom)
		}
	}
	var fail atomic.Bool
	fail.Store(true)
	g := New(func(ctx context.Context, key string, batch []int) ([]string, error) {
		runtime.Gosched() // let callers queue behind the call
		if fail.Load() {
			return nil, boom
		}
		return []string{answerOf(key, batch[0])}, nil
	}, Options{MaxBatch: 8, InFlight: 2})
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := g.Do(context.Background(), "k", i); !errors.Is(err, boom) {
				t.Errorf("caller %d got error %v, want %v", i, err, boom)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := keysHeld(g); n != 0 {
		t.Errorf("the group holds %d keys, want 0", n)
	}
	fail.Store(false)
	if got, err := g.Do(context.Background(), "k", 1); err != nil || got != "k/1" {
		t.Errorf("after the failures Do = %q, %v; want k/1", got, err)
	}
}

// A batch function that answers the wrong number of items fails its batch.
func TestWrongAnswerCountFailsTheBatch(t *testing.T) {
	g := New(func(context.Context, string, []int) ([]string, error) { return nil, nil }, Options{MaxBatch: 8, InFlight: 1})
	if _, err := g.Do(context.Background(), "k", 1); err == nil {
		t.Fatal("Do answered from a batch function that gave no answers")
	}
}

// A panicking batch answers each of its callers with a PanicError, the
// process goes on, and the key's state stays sound: later calls work and
// the group ends empty.
func TestPanickingBatchAnswersEveryCaller(t *testing.T) {
	for i, err := range failAll(t, 100, func() error { panic("kaboom") }) {
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
			t.Errorf("caller %d got error %v, want a PanicError of kaboom with its stack", i, err)
		}
	}
	var panics atomic.Bool
	panics.Store(true)
	p := newProbe()
	g := New(func(ctx context.Context, key string, batch []int) ([]string, error) {
		if panics.Load() {
			runtime.Gosched()
			panic("kaboom")
		}
		return p.run(ctx, key, batch)
	}, Options{MaxBatch: 8, InFlight: 2})
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := g.Do(context.Background(), "k", i)
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Value != "kaboom" {
				t.Errorf("caller %d got error %v, want a PanicError of kaboom", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := keysHeld(g); n != 0 {
		t.Fatalf("the group holds %d keys after the panics, want 0", n)
	}
	panics.Store(false)
	start = make(chan struct{})
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if got, err := g.Do(context.Background(), "k", i); err != nil || got != answerOf("k", i) {
				t.Errorf("after the panics Do(%d) = %q, %v", i, got, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if m := p.maxInFlight["k"]; m > 2 {
		t.Errorf("%d calls in flight after the panics, want at most 2", m)
	}
	if n := keysHeld(g); n != 0 {
		t.Errorf("the group holds %d keys, want 0", n)
	}
}

// A caller whose ctx ends while its item is queued gets ctx.Err() and its
// item never reaches the batch function; one whose item is already in a
// batch gets ctx.Err() while the item is decided all the same; the caller
// running a batch finishes it.
func TestCallerGivesUp(t *testing.T) {
	b := newBlocker()
	g := New(b.run, Options{MaxBatch: 8, InFlight: 1})
	first := doAsync(g, context.Background(), "k", 0)
	<-b.entered

	// Queued: withdrawn.
	ctx1, cancel1 := context.WithCancel(context.Background())
	gone := doAsync(g, ctx1, "k", 1)
	waitQueued(t, g, "k", 1)
	cancel1()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a queued caller whose ctx ended got %q, %v; want context.Canceled", r.v, r.err)
	}
	waitQueued(t, g, "k", 0)

	// In a batch: 2 runs the batch [2 3], 3 gives up while it runs.
	ctx2, cancel2 := context.WithCancel(context.Background())
	ctx3, cancel3 := context.WithCancel(context.Background())
	leader := doAsync(g, ctx2, "k", 2)
	waitQueued(t, g, "k", 1)
	member := doAsync(g, ctx3, "k", 3)
	waitQueued(t, g, "k", 2)
	b.release <- struct{}{} // the first batch ends; [2 3] starts
	if got := <-b.entered; !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("second batch %v, want [2 3] (1 withdrawn)", got)
	}
	cancel3()
	if r := <-member; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a caller in a running batch whose ctx ended got %q, %v; want context.Canceled", r.v, r.err)
	}
	cancel2()
	b.release <- struct{}{}
	if r := <-leader; r.err != nil || r.v != "k/2" {
		t.Errorf("the caller running the batch got %q, %v; want k/2", r.v, r.err)
	}
	if r := <-first; r.err != nil || r.v != "k/0" {
		t.Errorf("first caller got %q, %v", r.v, r.err)
	}
	if n := keysHeld(g); n != 0 {
		t.Errorf("the group holds %d keys, want 0", n)
	}
}

// A caller whose ctx ends as it is picked to run the next batch either
// withdrew first (the batch goes without it) or runs the batch and gets
// its answer: the batch's other callers are answered either way.
func TestCancelRacingTheHandOver(t *testing.T) {
	for round := range 200 {
		b := newBlocker()
		g := New(b.run, Options{MaxBatch: 8, InFlight: 1})
		first := doAsync(g, context.Background(), "k", 0)
		<-b.entered
		ctx, cancel := context.WithCancel(context.Background())
		picked := doAsync(g, ctx, "k", 1)
		waitQueued(t, g, "k", 1)
		other := doAsync(g, context.Background(), "k", 2)
		waitQueued(t, g, "k", 2)
		go cancel()
		b.release <- struct{}{}
		batch := <-b.entered
		b.release <- struct{}{}
		r := <-picked
		switch {
		case slices.Equal(batch, []int{1, 2}) && r.err == nil && r.v == "k/1":
		case slices.Equal(batch, []int{2}) && errors.Is(r.err, context.Canceled):
		default:
			t.Fatalf("round %d: batch %v and the cancelled caller got %q, %v", round, batch, r.v, r.err)
		}
		for i, ch := range []chan result{first, other} {
			if r := <-ch; r.err != nil || r.v != answerOf("k", 2*i) {
				t.Fatalf("round %d: caller %d got %q, %v", round, 2*i, r.v, r.err)
			}
		}
		if n := keysHeld(g); n != 0 {
			t.Fatalf("round %d: the group holds %d keys, want 0", round, n)
		}
	}
}

func TestNewRefusesZeroBounds(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted MaxBatch 0")
		}
	}()
	New(func(context.Context, string, []int) ([]string, error) { return nil, nil }, Options{InFlight: 1})
}
