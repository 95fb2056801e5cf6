package rdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/lifecycle"
)

// Pipeliner coalesces concurrent commands into pipelined round trips, as
// auto-pipelining clients do: under a spike, hundreds of grabs (and the
// expiry enqueues their orders make) waiting at the same moment go to Redis
// as one write and come back as one read, which saves Redis and Go a system
// call and a wake-up per command. A lone command still goes out at once;
// nothing waits for a batch to fill.
//
// Client returns a go-redis client whose every command takes this path, so
// scripts (with go-redis's own EVALSHA-then-EVAL fallback) and Asynq's
// enqueues use it unchanged. Blocking commands must not go through it.
//
// On a Redis Cluster a batch is one cluster pipeline: go-redis splits it by
// node and sends each node its share in one round trip, all nodes at once,
// following MOVED and ASK; so the commands of one slot in a batch share a round trip.
//
// Its lanes, and the replica watcher SetWait adds, are its Loops: Main
// starts them, and Close (or their Stop) drains them: every command queued
// by then is sent and answered, every later one refused (ErrPipelinerClosed).
//
// It is not a groupcommit.Group, though the idea is the same: tried as one
// (one key for the process, InFlight lanes, MaxPipeline a batch, callers
// sending the batches), a spike of 64 callers of a script on a real Redis
// cost 7.4-11.9 µs a command against 6.3-7.9 µs here, with 2 more
// allocations (195 B) a command. A Group allocates each call and each
// batch's items, since a caller may give up on its context while its item
// sits in a batch, where this reuses pooled requests and each lane's
// batch; and with every command of the process under one key, every caller
// takes the Group's one mutex where here it sends on a channel. The Group
// would win only the lone command, which it sends on the caller's
// goroutine (64-82 µs a command against 104-128 µs).
type Pipeliner struct {
	rdb    redis.UniversalClient // sends the batches
	client redis.UniversalClient // routes its commands into the batches
	reqs   chan *pipeReq
	lanes  lifecycle.Loops // each sends one pipeline at a time (lane)
	wait   *waitPolicy     // what durable commands wait for (nil: nothing); see replicas.go
	watch  *lifecycle.Loop // reads each master's replicas again (SetWait with AutoReplicas; nil: none)

	mu      sync.RWMutex  // held to read while queueing, to write while closing
	closed  bool          // no command is queued any more (refuse)
	closing chan struct{} // closed as refuse begins: a Do waiting for room in reqs gives up
	refused sync.Once
	ended   sync.Once // Client closed

	waitsShort    atomic.Int64 // WAITs answered by fewer replicas than asked, or not at all (replicas.go)
	notReplicated atomic.Int64 // durable commands failed with ErrNotReplicated (replicas.go)
}

// ErrPipelinerClosed answers commands sent after Close.
var ErrPipelinerClosed = errors.New("redis pipeliner closed")

type pipeReq struct {
	cmd     redis.Cmder
	durable bool // answered only once replicated (Durable)
	done    chan struct{}
}

// MaxPipeline is the most commands one round trip carries.
const MaxPipeline = 256

// NewPipeliner returns a pipeliner of lanes loops that each send one
// pipeline at a time on rdb, a *redis.Client or a *redis.ClusterClient (its
// options make Client's). Its commands are answered once its Loops run.
func NewPipeliner(rdb redis.UniversalClient, lanes int) *Pipeliner {
	p := &Pipeliner{rdb: rdb, reqs: make(chan *pipeReq, MaxPipeline*lanes), closing: make(chan struct{})}
	// Client is of rdb's kind, so it answers what go-redis asks of each kind;
	// the hook takes every command before it could reach a server.
	switch c := rdb.(type) {
	case *redis.Client:
		opt := *c.Options()
		p.client = redis.NewClient(&opt)
	case *redis.ClusterClient:
		opt := *c.Options()
		p.client = redis.NewClusterClient(&opt)
	default:
		panic(fmt.Sprintf("rdb.NewPipeliner: %T is neither a *redis.Client nor a *redis.ClusterClient", rdb))
	}
	p.client.AddHook(pipeHook{p})
	for range lanes {
		p.lanes = append(p.lanes, lifecycle.New("redis pipeliner lane", p.lane))
	}
	return p
}

// Loops are the pipeliner's loops: the replica watcher (SetWait's, when it
// reads the replicas) and then the lanes. Main starts them after SetWait
// and before anything sends through Client, and stops them after the last
// of its users; Close stops them too. Stopping any lane refuses the
// commands that come after, and the lanes return once they have sent what
// was queued before.
func (p *Pipeliner) Loops() lifecycle.Loops {
	if p.watch == nil {
		return p.lanes
	}
	return append(lifecycle.Loops{p.watch}, p.lanes...)
}

// Client is a client whose commands go through the pipeliner.
func (p *Pipeliner) Client() redis.UniversalClient { return p.client }

var reqPool = sync.Pool{New: func() any { return &pipeReq{done: make(chan struct{}, 1)} }}

// Do sends cmd in the next pipeline and waits for its reply; a durable
// command (ctx marked by Durable) is answered once replicated (SetWait).
func (p *Pipeliner) Do(ctx context.Context, cmd redis.Cmder) error {
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		cmd.SetErr(ErrPipelinerClosed)
		return cmd.Err()
	}
	r := reqPool.Get().(*pipeReq)
	r.cmd, r.durable = cmd, isDurable(ctx)
	select {
	case p.reqs <- r:
	case <-p.closing: // no lane may take it: refused, never left waiting
		p.mu.RUnlock()
		r.cmd = nil
		reqPool.Put(r)
		cmd.SetErr(ErrPipelinerClosed)
		return cmd.Err()
	}
	p.mu.RUnlock()
	<-r.done
	r.cmd = nil
	reqPool.Put(r)
	return cmd.Err()
}

// pipeHook hands each command of Client to the pipeliner instead of sending it.
type pipeHook struct{ p *Pipeliner }

func (h pipeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h pipeHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return h.p.Do(ctx, cmd) }
}

func (h pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Close refuses later commands, stops the loops once the lanes have sent
// the commands already queued (with no lane ever started, it answers them
// ErrPipelinerClosed), and closes Client. Close may be called more than once.
func (p *Pipeliner) Close() {
	p.refuse()
	p.Loops().Stop()
	for r := range p.reqs { // left with no lane to send them
		r.cmd.SetErr(ErrPipelinerClosed)
		r.done <- struct{}{}
	}
	p.ended.Do(func() { p.client.Close() })
}

// refuse makes every later command fail with ErrPipelinerClosed and closes
// the queue, whose lanes then return once it is empty.
func (p *Pipeliner) refuse() {
	p.refused.Do(func() {
		close(p.closing)
		p.mu.Lock()
		p.closed = true
		close(p.reqs)
		p.mu.Unlock()
	})
}

// lane sends the queue's commands a pipeline at a time until the queue is
// closed and empty: when its ctx ends it closes the queue (refuse) and
// drains it with the other lanes.
func (p *Pipeliner) lane(ctx context.Context) {
	stop := context.AfterFunc(ctx, p.refuse)
	defer stop()
	batch := make([]*pipeReq, 0, MaxPipeline)
	for first := range p.reqs {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < MaxPipeline {
			select {
			case r, ok := <-p.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		p.sendBatch(batch)
		for _, r := range batch {
			r.done <- struct{}{}
		}
	}
}

// sendBatch sends a batch: its durable commands through sendWaited when
// they wait for replicas, the rest as one pipeline.
func (p *Pipeliner) sendBatch(batch []*pipeReq) {
	ctx := context.Background()
	if p.wait == nil || (p.wait.replicas == 0) {
		p.send(ctx, batch)
		return
	}
	var durable, plain []*pipeReq
	for _, r := range batch {
		if r.durable {
			durable = append(durable, r)
		} else {
			plain = append(plain, r)
		}
	}
	if len(durable) == 0 {
		p.send(ctx, plain)
		return
	}
	var wg sync.WaitGroup
	if len(plain) > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); p.send(ctx, plain) }()
	}
	p.sendWaited(ctx, durable)
	wg.Wait()
}

// send runs reqs as one pipeline; each command gets its own reply or
// error (a NOSCRIPT among them is retried by go-redis's Script.Run).
func (p *Pipeliner) send(ctx context.Context, batch []*pipeReq) {
	pipe := p.rdb.Pipeline()
	for _, r := range batch {
		pipe.Process(ctx, r.cmd)
	}
	pipe.Exec(ctx)
}
