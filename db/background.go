package db

import "sync"

// Background runs small jobs off the request path on a fixed pool, such as
// enqueueing an order's expiry task after the grab has answered. When the
// queue is full the job runs in the caller instead, so nothing is dropped;
// a job lost to a crash is covered by the periodic sweeps.
type Background struct {
	jobs chan func()
	wg   sync.WaitGroup
	once sync.Once
}

// NewBackground starts workers goroutines taking jobs from a queue of size queue.
func NewBackground(workers, queue int) *Background {
	b := &Background{jobs: make(chan func(), queue)}
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

// Go runs job on the pool, or now when the pool is missing or full.
func (b *Background) Go(job func()) {
	if b == nil {
		job()
		return
	}
	select {
	case b.jobs <- job:
	default:
		job()
	}
}

// Close runs the jobs already queued and stops the workers.
func (b *Background) Close() {
	b.once.Do(func() { close(b.jobs) })
	b.wg.Wait()
}
