// Package groupcommit groups concurrent requests of one key into batches
// (group commit): a request that arrives while a key's batches are in
// flight waits and goes out with the others that arrived meanwhile, in one
// call of a batch function.
//
// Nothing waits on a timer: a request that finds fewer than InFlight
// batches of its key running starts one at once, alone, and the window in
// which the next batch gathers is the call in flight. The callers run the
// batches themselves (the first caller of a batch runs it), so the package
// starts no goroutine, and it keeps state only for keys with work.
package groupcommit

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
)

// Options bounds the batches of a Group.
type Options struct {
	// MaxBatch is the most items one call of the batch function carries.
	MaxBatch int
	// InFlight is the most calls of the batch function one key may have
	// running at once.
	InFlight int
}

// Group batches the items of each key and answers each caller from its
// batch's call.
type Group[K comparable, T, R any] struct {
	run func(ctx context.Context, key K, batch []T) ([]R, error)
	opt Options

	mu    sync.Mutex
	keys  map[K]*keyState[T, R] // only keys with a queued item or a batch in flight
	spare *keyState[T, R]       // a freed state, reused by the next key
}

// keyState is one key's batches in flight and the calls waiting for them.
type keyState[T, R any] struct {
	busy    int           // batches of the key in flight
	waiting []*call[T, R] // queued, in arrival order
}

// call is one caller's item and, once its batch ran, its answer.
type call[T, R any] struct {
	item  [1]T          // an array, so a lone batch's items need no slice of their own
	state int           // queued, taken or leading; written under Group.mu
	batch []*call[T, R] // when leading: the rest of the batch to run; under Group.mu
	done  chan struct{} // one signal: answered (taken) or to run batch (leading)
	res   R
	err   error
}

const (
	queued  = iota // in keyState.waiting
	taken          // in a batch another caller runs
	leading        // to run its batch
)

// New returns a Group that decides batches with run, which must return one
// answer per item, in the items' order. New panics when a bound is below 1.
func New[K comparable, T, R any](run func(ctx context.Context, key K, batch []T) ([]R, error), opt Options) *Group[K, T, R] {
	if opt.MaxBatch < 1 || opt.InFlight < 1 {
		panic(fmt.Sprintf("groupcommit.New: MaxBatch %d and InFlight %d must be at least 1", opt.MaxBatch, opt.InFlight))
	}
	return &Group[K, T, R]{run: run, opt: opt, keys: map[K]*keyState[T, R]{}}
}

// PanicError answers the callers of a batch whose function panicked.
type PanicError struct {
	Value any    // what the batch function panicked with
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("groupcommit: batch panicked: %v", e.Value) }

// Do decides item in a batch with the items of key that arrive meanwhile
// and returns its answer, or the error of its batch.
//
// The batch function runs under the context of the caller that runs the
// batch, without its cancellation (context.WithoutCancel), since the batch
// answers other callers too. When ctx ends while the item is still queued,
// Do withdraws the item (it never reaches the batch function) and returns
// ctx.Err(). When ctx ends once the item is in a batch, the item is decided
// all the same: a caller running the batch finishes it and returns its
// answer, any other returns ctx.Err() and its answer is dropped.
func (g *Group[K, T, R]) Do(ctx context.Context, key K, item T) (R, error) {
	c := &call[T, R]{item: [1]T{item}}
	g.mu.Lock()
	st := g.keys[key]
	if st == nil {
		if st = g.spare; st != nil {
			g.spare = nil
		} else {
			st = &keyState[T, R]{}
		}
		g.keys[key] = st
	}
	if st.busy < g.opt.InFlight {
		st.busy++
		g.mu.Unlock()
		g.lead(ctx, key, st, c, nil)
		return c.res, c.err
	}
	c.state, c.done = queued, make(chan struct{}, 1)
	st.waiting = append(st.waiting, c)
	g.mu.Unlock()

	select {
	case <-c.done:
	case <-ctx.Done():
		g.mu.Lock()
		state := c.state
		if state == queued {
			st.waiting = remove(st.waiting, c)
		}
		g.mu.Unlock()
		if state != leading {
			var zero R
			return zero, ctx.Err()
		}
		<-c.done // the hand-over is under way: the batch waits on this caller
	}
	// state and batch were written before the signal: no lock to read them.
	if c.state == leading {
		g.lead(ctx, key, st, c, c.batch)
	}
	return c.res, c.err
}

// lead runs the batch of c, the caller's call, and rest, answers rest,
// and hands the key's slot to the next batch or frees it.
func (g *Group[K, T, R]) lead(ctx context.Context, key K, st *keyState[T, R], c *call[T, R], rest []*call[T, R]) {
	items := c.item[:]
	if len(rest) > 0 {
		items = make([]T, 1+len(rest))
		items[0] = c.item[0]
		for i, r := range rest {
			items[1+i] = r.item[0]
		}
	}
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	res, err := g.call(ctx, key, items)
	if err == nil && len(res) != len(items) {
		err = fmt.Errorf("groupcommit: the batch function answered %d of %d items", len(res), len(items))
	}
	if err != nil {
		c.err = err
	} else {
		c.res = res[0]
	}
	for i, r := range rest {
		if err != nil {
			r.err = err
		} else {
			r.res = res[1+i]
		}
		r.done <- struct{}{}
	}

	g.mu.Lock()
	n := min(len(st.waiting), g.opt.MaxBatch)
	if n == 0 {
		if st.busy--; st.busy == 0 {
			delete(g.keys, key)
			st.waiting = nil // a spike's long queue is not kept for the next key
			g.spare = st
		}
		g.mu.Unlock()
		return
	}
	next := make([]*call[T, R], n)
	copy(next, st.waiting)
	left := copy(st.waiting, st.waiting[n:])
	clear(st.waiting[left:])
	st.waiting = st.waiting[:left]
	for _, x := range next {
		x.state = taken
	}
	next[0].state, next[0].batch = leading, next[1:]
	g.mu.Unlock()
	next[0].done <- struct{}{}
}

// call runs the batch function, turning a panic into a PanicError.
func (g *Group[K, T, R]) call(ctx context.Context, key K, items []T) (res []R, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return g.run(ctx, key, items)
}

// remove deletes c from calls, keeping the order.
func remove[T, R any](calls []*call[T, R], c *call[T, R]) []*call[T, R] {
	for i, x := range calls {
		if x == c {
			copy(calls[i:], calls[i+1:])
			calls[len(calls)-1] = nil
			return calls[:len(calls)-1]
		}
	}
	return calls
}
