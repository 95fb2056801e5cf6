package db

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Pipeliner coalesces concurrent script calls into pipelined round trips, as
// auto-pipelining clients do: under a spike, hundreds of grabs waiting at the
// same moment go to Redis as one write and come back as one read, which saves
// Redis and Go a system call and a wake-up per grab. A lone call still goes
// out at once; nothing waits for a batch to fill.
type Pipeliner struct {
	rdb  redis.UniversalClient
	reqs chan *pipeReq
	wg   sync.WaitGroup
	once sync.Once
}

type pipeReq struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{}
}

// MaxPipeline is the most calls one round trip carries.
const MaxPipeline = 256

// NewPipeliner starts lanes goroutines that each send one pipeline at a time.
func NewPipeliner(rdb redis.UniversalClient, lanes int) *Pipeliner {
	p := &Pipeliner{rdb: rdb, reqs: make(chan *pipeReq, MaxPipeline*lanes)}
	for i := 0; i < lanes; i++ {
		p.wg.Add(1)
		go p.lane()
	}
	return p
}

var reqPool = sync.Pool{New: func() any { return &pipeReq{done: make(chan struct{}, 1)} }}

// Run runs the script like script.Run, sharing the round trip with concurrent calls.
func (p *Pipeliner) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	r := reqPool.Get().(*pipeReq)
	r.ctx, r.script, r.keys, r.args = ctx, script, keys, args
	p.reqs <- r
	<-r.done
	v, err := r.cmd.Result()
	r.ctx, r.script, r.keys, r.args, r.cmd = nil, nil, nil, nil, nil
	reqPool.Put(r)
	return v, err
}

// Close stops the lanes after the calls already queued.
func (p *Pipeliner) Close() {
	p.once.Do(func() { close(p.reqs) })
	p.wg.Wait()
}

func (p *Pipeliner) lane() {
	defer p.wg.Done()
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
		p.send(batch)
	}
}

// send runs the batch in one pipeline by SHA; scripts Redis does not know yet
// (a fresh or restarted server) are loaded and those calls sent again by body.
func (p *Pipeliner) send(batch []*pipeReq) {
	ctx := context.Background()
	pipe := p.rdb.Pipeline()
	for _, r := range batch {
		r.cmd = r.script.EvalSha(ctx, pipe, r.keys, r.args...)
	}
	pipe.Exec(ctx)
	var retry []*pipeReq
	for _, r := range batch {
		if err := r.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			retry = append(retry, r)
		}
	}
	if len(retry) > 0 {
		pipe = p.rdb.Pipeline()
		for _, r := range retry {
			r.cmd = r.script.Eval(ctx, pipe, r.keys, r.args...)
		}
		pipe.Exec(ctx)
	}
	for _, r := range batch {
		r.done <- struct{}{}
	}
}
