package background

import "sync"

// Pool runs small jobs off the request path on a fixed pool, such as
// enqueueing an order's expiry task after the grab has answered. When the
// queue is full, or the pool is closed, the job runs in the caller instead,
// so nothing is dropped; a job lost to a crash is covered by the periodic sweeps.
type Pool struct {
	jobs chan func()
	wg   sync.WaitGroup
	// mu guards closed and the send on jobs: Go holds it shared while it
	// sends, Close exclusively while it closes jobs, so no send meets a closed channel.
	mu     sync.RWMutex
	closed bool
}

// New starts workers goroutines taking jobs from a queue of size queue.
func New(workers, queue int) *Pool {
	b := &Pool{jobs: make(chan func(), queue)}
	for i := 0; i < workers; i++ {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for job := range b.jobs {
				job()
			}
		}()
	}
	return b
}

// Go runs job on the pool, or now when the pool is missing, full or closed:
// handlers still answering during shutdown keep their follow-up work.
func (b *Pool) Go(job func()) {
	if b == nil || !b.queue(job) {
		job()
	}
}

// queue hands job to the workers and reports whether it did.
func (b *Pool) queue(job func()) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return false
	}
	select {
	case b.jobs <- job:
		return true
	default:
		return false
	}
}

// Close runs the jobs already queued and stops the workers; later jobs run in their caller.
func (b *Pool) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.jobs)
	}
	b.mu.Unlock()
	b.wg.Wait()
}
