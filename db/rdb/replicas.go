package rdb

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/lifecycle"
)

// A 201 is a promise: a change acknowledged to a shopper must survive the
// loss of any one Redis node. Where masters have replicas, the pipeliner
// ends each node's share of a batch that carries a durable command with
// WAIT numreplicas timeout on the same connection (one WAIT per node per
// batch, in the same round trip on a single server), and answers the
// durable commands only once that many replicas hold the change; past the
// timeout they fail with ErrNotReplicated (503 unavailable). The change may
// still be on the master: the client retries with its Idempotency-Key, and
// the keyed script's remembered answer tells it what happened.

// AutoReplicas asks the pipeliner to wait for one replica on every master
// that has one connected, and for none on a master that has none (the
// embedded Redis, a single server without replicas, a master whose replica
// is gone).
const AutoReplicas = -1

// ErrNotReplicated answers a durable command whose change no replica
// confirmed within the wait's timeout.
var ErrNotReplicated = &db.Error{Code: db.EUNAVAILABLE, Message: "the change could not be confirmed on a replica in time; retry with the same Idempotency-Key to learn whether it holds"}

// ErrRedirected answers a durable command that kept meeting a slot on the move
// (MOVED, ASK, CLUSTERDOWN, TRYAGAIN) while the cluster changed hands.
var ErrRedirected = &db.Error{Code: db.EUNAVAILABLE, Message: "the item's Redis node is changing over; try again shortly"}

type durableKey struct{}

// Durable marks ctx's commands as changes a shopper is told about: through
// the pipeliner, they are answered only once replicated (see SetWait).
func Durable(ctx context.Context) context.Context {
	return context.WithValue(ctx, durableKey{}, true)
}

func isDurable(ctx context.Context) bool {
	v, _ := ctx.Value(durableKey{}).(bool)
	return v
}

// waitPolicy is how many replicas a durable command waits for, and how long.
type waitPolicy struct {
	replicas int // AutoReplicas, 0 (off) or a number
	timeout  time.Duration

	mu        sync.RWMutex
	connected map[string]int // master address → replicas connected (auto), as last read
	stale     chan struct{}  // asks the refresher to read again now
}

// SetWait makes durable commands wait for replicas (AutoReplicas, 0 for
// none, or a number) for at most timeout. With AutoReplicas it reads every
// master's connected replicas now, and its Loops gain the replica watcher,
// which reads them again once a second (and at once after a wait fell
// short) until stopped. Call it before the Loops start.
func (p *Pipeliner) SetWait(replicas int, timeout time.Duration) {
	// A WAIT that runs out answers at its timeout; the connection's reply
	// timeout must not run out first, or the batch would fail as if the
	// node were gone (a cluster's is 1 s unless REDIS_URL sets another).
	var readTimeout time.Duration
	switch c := p.rdb.(type) {
	case *redis.Client:
		readTimeout = c.Options().ReadTimeout
	case *redis.ClusterClient:
		readTimeout = c.Options().ReadTimeout
	}
	if readTimeout > 0 && timeout > readTimeout*3/4 {
		timeout = readTimeout * 3 / 4
	}
	w := &waitPolicy{replicas: replicas, timeout: max(timeout, time.Millisecond), stale: make(chan struct{}, 1)}
	if replicas == AutoReplicas {
		w.refresh(context.Background(), p.rdb)
		p.watch = lifecycle.New("redis replica watch", func(ctx context.Context) { w.refreshLoop(ctx, p.rdb) })
	}
	p.wait = w
}

// need is how many replicas a durable command on the master at addr waits for.
func (w *waitPolicy) need(addr string) int {
	if w == nil {
		return 0
	}
	if w.replicas != AutoReplicas {
		return w.replicas
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	return min(1, w.connected[addr])
}

// fellShort asks for a fresh reading of the replicas (auto).
func (w *waitPolicy) fellShort() {
	select {
	case w.stale <- struct{}{}:
	default:
	}
}

// refreshLoop reads the replicas once a second, and at once when a wait
// fell short, until ctx ends.
func (w *waitPolicy) refreshLoop(ctx context.Context, c redis.UniversalClient) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.stale:
		}
		w.refresh(ctx, c)
	}
}

// refresh reads connected_slaves of every master (INFO replication). A
// master that does not answer keeps the count last read: a busy master must
// not pass for one without replicas, whose changes would be acknowledged
// unconfirmed. A master never read (the embedded Redis, which has no such
// section) counts as having none.
func (w *waitPolicy) refresh(ctx context.Context, c redis.UniversalClient) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var mu sync.Mutex
	read := map[string]int{}
	ForEachServer(ctx, c, func(ctx context.Context, s *redis.Client) error {
		info, err := s.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		read[s.Options().Addr] = connectedReplicas(info)
		mu.Unlock()
		return nil
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.connected == nil {
		w.connected = map[string]int{}
	}
	for addr, n := range read {
		w.connected[addr] = n
	}
}

// HasReplicas tells whether any master of c has a replica connected.
func HasReplicas(ctx context.Context, c redis.UniversalClient) bool {
	w := &waitPolicy{}
	w.refresh(ctx, c)
	for _, n := range w.connected {
		if n > 0 {
			return true
		}
	}
	return false
}

// connectedReplicas reads connected_slaves from an INFO replication answer.
func connectedReplicas(info string) int {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// redirected tells whether err says the command's slot is served elsewhere
// or not at all for now: the command did not run, and may be sent again
// once the cluster's layout is read anew.
func redirected(err error) bool {
	if err == nil {
		return false
	}
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || redis.IsClusterDownError(err) || redis.IsTryAgainError(err)
}

// firstKey is the first key of a script call (EVAL, EVALSHA and their _RO
// forms), or "" for any other command or a script without keys.
func firstKey(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 4 || !strings.HasPrefix(strings.ToLower(cmd.Name()), "eval") {
		return ""
	}
	if n, _ := strconv.Atoi(toString(args[2])); n < 1 {
		return ""
	}
	return toString(args[3])
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// sendWaited sends durable requests each to its master with WAIT behind
// them on the same connection, and fails those no replica confirmed. On a
// cluster the requests are grouped by master; a request whose slot moved
// (the failover it waits out) is sent again after the layout is read anew,
// a few times, then fails with ErrRedirected. Requests for a master that
// needs no replica go through send (plain pipeline, redirects followed).
func (p *Pipeliner) sendWaited(ctx context.Context, reqs []*pipeReq) {
	switch c := p.rdb.(type) {
	case *redis.Client:
		n := p.wait.need(c.Options().Addr)
		if n == 0 {
			p.send(ctx, reqs)
			return
		}
		p.waitOn(ctx, c, reqs, n)
	case *redis.ClusterClient:
		for attempt := 0; len(reqs) > 0; attempt++ {
			groups := map[*redis.Client][]*pipeReq{}
			var plain []*pipeReq
			for _, r := range reqs {
				key := firstKey(r.cmd)
				node, err := c.MasterForKey(ctx, key)
				if key == "" || err != nil || p.wait.need(node.Options().Addr) == 0 {
					plain = append(plain, r)
					continue
				}
				groups[node] = append(groups[node], r)
			}
			var wg sync.WaitGroup
			if len(plain) > 0 {
				wg.Add(1)
				go func() { defer wg.Done(); p.send(ctx, plain) }()
			}
			for node, rs := range groups {
				wg.Add(1)
				go func() { defer wg.Done(); p.waitOn(ctx, node, rs, p.wait.need(node.Options().Addr)) }()
			}
			wg.Wait()
			var again []*pipeReq
			lost := false // a node did not answer: the layout may have changed
			for _, rs := range groups {
				for _, r := range rs {
					switch err := r.cmd.Err(); {
					case redirected(err):
						again = append(again, r)
					case FailoverError(err):
						lost = true
					}
				}
			}
			if lost || len(again) > 0 {
				c.ReloadState(ctx)
			}
			if len(again) > 0 && attempt == 2 {
				for _, r := range again {
					r.cmd.SetErr(ErrRedirected)
				}
				return
			}
			reqs = again
		}
	default:
		p.send(ctx, reqs)
	}
}

// waitOn sends reqs to one server as one pipeline ending in WAIT n, and
// fails the ones that succeeded with ErrNotReplicated when fewer than n
// replicas confirmed them. A nil reply (redis.Nil) is a success too: a
// SET NX GET answers nil when it wrote.
func (p *Pipeliner) waitOn(ctx context.Context, node *redis.Client, reqs []*pipeReq, n int) {
	pipe := node.Pipeline()
	for _, r := range reqs {
		pipe.Process(ctx, r.cmd)
	}
	w := redis.NewIntCmd(ctx, "wait", n, p.wait.timeout.Milliseconds())
	pipe.Process(ctx, w)
	pipe.Exec(ctx)
	if w.Err() == nil && w.Val() >= int64(n) {
		return
	}
	p.wait.fellShort()
	p.waitsShort.Add(1)
	for _, r := range reqs {
		if err := r.cmd.Err(); err == nil || err == redis.Nil {
			r.cmd.SetErr(ErrNotReplicated)
			p.notReplicated.Add(1)
		}
	}
}

// WaitsShort is how many WAITs fewer replicas answered than were asked for
// (or none did, the master gone) since the pipeliner started.
func (p *Pipeliner) WaitsShort() int64 { return p.waitsShort.Load() }

// NotReplicated is how many durable commands failed with ErrNotReplicated
// (answered 503 unavailable) since the pipeliner started.
func (p *Pipeliner) NotReplicated() int64 { return p.notReplicated.Load() }
