// Package lifecycle gives the process's background loops one life: a Loop
// is started once (Start), asked to end by Stop, which cancels the loop's
// context and waits while the loop drains what it holds and returns. Main
// (cmd/seckill) starts the process's loops and stops them at Close, so a
// closed process leaves no loop running (TestClosingLeavesNoLoop).
package lifecycle

import (
	"context"
	"sync"
)

// A Loop is one background goroutine: run, given a context that ends at
// Stop, returns once it has drained.
type Loop struct {
	name string
	run  func(ctx context.Context)

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// New is the loop named name that runs run.
func New(name string, run func(ctx context.Context)) *Loop {
	return &Loop{name: name, run: run, done: make(chan struct{})}
}

// Name is the loop's name, for logs.
func (l *Loop) Name() string { return l.name }

// Start runs the loop in a goroutine of its own; a loop runs once: a second
// Start, or a Start after Stop, does nothing.
func (l *Loop) Start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.stopped {
		return
	}
	l.started = true
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	running.Store(l, l.name)
	go func() {
		defer close(l.done)
		defer running.Delete(l)
		l.run(ctx)
	}()
}

// running are the loops whose goroutine has not returned yet.
var running sync.Map // *Loop → its name

// Running names the loops of this binary whose goroutine has not returned
// (a test finds by it a loop started on a first use, or left after Close).
func Running() map[*Loop]string {
	out := map[*Loop]string{}
	running.Range(func(k, v any) bool { out[k.(*Loop)] = v.(string); return true })
	return out
}

// Until is a loop that only waits for its Stop and then calls end: for a
// part with goroutines of its own (Asynq's worker), so that it ends in its
// place among the loops.
func Until(name string, end func()) *Loop {
	return New(name, func(ctx context.Context) { <-ctx.Done(); end() })
}

// Stop ends the loop and waits until it has drained and returned; a loop
// never started is only marked stopped. Stop may be called more than once.
func (l *Loop) Stop() {
	l.mu.Lock()
	started := l.started
	l.stopped = true
	if l.cancel != nil {
		l.cancel()
	}
	l.mu.Unlock()
	if started {
		<-l.done
	}
}

// Loops are loops started and stopped together: Stop stops them in the
// reverse order of their start.
type Loops []*Loop

// Start starts every loop, in order.
func (ls Loops) Start() {
	for _, l := range ls {
		l.Start()
	}
}

// Stop stops every loop, the last started first, each drained before the next.
func (ls Loops) Stop() {
	for i := len(ls) - 1; i >= 0; i-- {
		ls[i].Stop()
	}
}
