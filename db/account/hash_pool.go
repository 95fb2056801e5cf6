package account

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db"
	"golang.org/x/crypto/bcrypt"
)

// HashPool runs bcrypt, the one deliberately slow thing on the request path,
// on a bounded number of goroutines with a bounded queue: a flood of logins
// can take at most its slots' worth of CPU from the grabs, and when even the
// queue is full it is refused at once instead of piling up.
type HashPool struct {
	slots    chan struct{}
	waiting  atomic.Int32
	maxQueue int32
	maxWait  time.Duration
}

// NewHashPool returns a pool of size concurrent hashes with at most queue callers waiting, each at most maxWait.
func NewHashPool(size, queue int, maxWait time.Duration) *HashPool {
	return &HashPool{slots: make(chan struct{}, max(1, size)), maxQueue: int32(queue), maxWait: maxWait}
}

// DefaultHashPool uses half the CPUs (at least one), with four waiting per slot for up to two seconds.
func DefaultHashPool() *HashPool {
	n := max(1, runtime.GOMAXPROCS(0)/2)
	return NewHashPool(n, 4*n, 2*time.Second)
}

// errHashBusy is the answer when the pool and its queue are full.
var errHashBusy = &db.Error{Code: db.EUNAVAILABLE, Message: "sign-in is busy; try again in a moment", RetryAfter: time.Second}

func (p *HashPool) acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	if p.waiting.Add(1) > p.maxQueue {
		p.waiting.Add(-1)
		return errHashBusy
	}
	defer p.waiting.Add(-1)
	t := time.NewTimer(p.maxWait)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-t.C:
		return errHashBusy
	case <-ctx.Done():
		return errHashBusy
	}
}

func (p *HashPool) release() { <-p.slots }

// Generate hashes a password at the given cost.
func (p *HashPool) Generate(ctx context.Context, password string, cost int) ([]byte, error) {
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.release()
	return bcrypt.GenerateFromPassword([]byte(password), cost)
}

// Compare reports whether password matches hash (nil) or not (an error).
func (p *HashPool) Compare(ctx context.Context, hash, password string) (bool, error) {
	if err := p.acquire(ctx); err != nil {
		return false, err
	}
	defer p.release()
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil, nil
}
