package rdb_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// Without a URL, Open starts the embedded Redis behind a plain client, and
// Asynq reaches it with plain options.
func TestOpenEmbeddedIsOneServer(t *testing.T) {
	r, err := rdb.Open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.Client.(*redis.Client); !ok || r.Cluster || !r.Embedded {
		t.Fatalf("client %T cluster %v embedded %v, want an embedded *redis.Client", r.Client, r.Cluster, r.Embedded)
	}
	if _, ok := r.AsynqConnOpt().(asynq.RedisClientOpt); !ok {
		t.Fatalf("asynq option %T, want asynq.RedisClientOpt", r.AsynqConnOpt())
	}
}

// clusterURL is the Redis Cluster of REDIS_URL, held by this test; the test
// skips when REDIS_URL does not list a cluster's hosts.
func clusterURL(t *testing.T) string {
	t.Helper()
	if !strings.Contains(os.Getenv("REDIS_URL"), ",") {
		t.Skip("REDIS_URL does not list a Redis Cluster's hosts (REDIS_URL=redis://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103)")
	}
	return dbtest.RedisURL(t)
}

// Several hosts open a cluster client that reaches every slot, and one
// host of the cluster alone does too; Asynq gets cluster options.
func TestOpenCluster(t *testing.T) {
	u := clusterURL(t)
	ctx := context.Background()
	first, _, _ := strings.Cut(strings.TrimPrefix(u, "redis://"), ",")
	for _, url := range []string{u, "redis://" + first} {
		r, err := rdb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c, ok := r.Client.(*redis.ClusterClient)
		if !ok || !r.Cluster {
			t.Fatalf("%s: client %T cluster %v, want a *redis.ClusterClient", url, r.Client, r.Cluster)
		}
		// Keys of many slots, so every master answers some.
		for i := range 64 {
			k := fmt.Sprintf("{open-cluster-%d}:k", i)
			if err := c.Set(ctx, k, i, time.Minute).Err(); err != nil {
				t.Fatalf("%s: set %s: %v", url, k, err)
			}
			if got, err := c.Get(ctx, k).Int(); err != nil || got != i {
				t.Fatalf("%s: get %s = %d, %v; want %d", url, k, got, err, i)
			}
		}
		opt, ok := r.AsynqConnOpt().(asynq.RedisClusterClientOpt)
		if !ok || len(opt.Addrs) == 0 {
			t.Fatalf("%s: asynq option %#v, want asynq.RedisClusterClientOpt with the hosts", url, r.AsynqConnOpt())
		}
	}
	if _, err := rdb.Open(ctx, "redis://"+first+"/3"); err == nil || !strings.Contains(err.Error(), "only database 0") {
		t.Fatalf("database 3 of a cluster node: %v, want refused", err)
	}
}

// tripRecorder numbers the pipeliner's batches (cluster-level pipelines) and
// notes which batch each node's round trip belonged to.
type tripRecorder struct {
	mu      sync.Mutex
	batches int
	batchOf map[redis.Cmder]int
	trips   map[int][]string // batch → the node of each of its round trips
	mixed   int              // round trips carrying commands of two batches
}

type batchHook struct{ r *tripRecorder }

func (batchHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (batchHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h batchHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.r.mu.Lock()
		h.r.batches++
		for _, c := range cmds {
			h.r.batchOf[c] = h.r.batches
		}
		h.r.mu.Unlock()
		return next(ctx, cmds)
	}
}

type nodeHook struct {
	r    *tripRecorder
	addr string
}

func (nodeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.r.mu.Lock()
		b, ok := h.r.batchOf[cmds[0]]
		if !ok { // a new connection's own set-up, no batch's
			h.r.mu.Unlock()
			return next(ctx, cmds)
		}
		for _, c := range cmds[1:] {
			if h.r.batchOf[c] != b {
				h.r.mixed++
			}
		}
		h.r.trips[b] = append(h.r.trips[b], h.addr)
		h.r.mu.Unlock()
		return next(ctx, cmds)
	}
}

// On a Redis Cluster the pipeliner answers each of many concurrent calls
// over keys of many slots exactly once, coalesces them, and sends each batch
// to each node in one round trip: the commands of one slot that wait
// together always share a round trip.
func TestPipelinerOnClusterOneRoundTripPerNode(t *testing.T) {
	u := clusterURL(t)
	ctx := context.Background()
	r, err := rdb.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	opt := *r.Client.(*redis.ClusterClient).Options()
	c := redis.NewClusterClient(&opt)
	defer c.Close()
	rec := &tripRecorder{batchOf: map[redis.Cmder]int{}, trips: map[int][]string{}}
	c.AddHook(batchHook{rec})
	c.OnNewNode(func(n *redis.Client) { n.AddHook(nodeHook{rec, n.Options().Addr}) })
	p := rdb.NewPipeliner(c, 4)
	p.Loops().Start()
	defer p.Close()

	const workers, each, slots = 200, 20, 16
	key := func(i int) string { return fmt.Sprintf("{pc-%d}:n", i%slots) }
	answers := make([][]int64, slots) // per key, the values its calls were answered
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				k := (w + i) % slots
				v, err := incrBy.Run(ctx, p.Client(), []string{key(k)}, 1).Int64()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				answers[k] = append(answers[k], v)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	calls := make([]int64, slots) // per key, how many calls it had
	for w := range workers {
		for i := range each {
			calls[(w+i)%slots]++
		}
	}
	for k := range slots {
		want := calls[k]
		if got, err := r.Client.Get(ctx, key(k)).Int64(); err != nil || got != want || int64(len(answers[k])) != want {
			t.Fatalf("%s = %d (%v) after %d answers, want %d", key(k), got, err, len(answers[k]), want)
		}
		seen := map[int64]bool{}
		for _, v := range answers[k] {
			if seen[v] {
				t.Fatalf("%s: value %d answered twice", key(k), v)
			}
			seen[v] = true
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.mixed > 0 {
		t.Fatalf("%d round trips mixed commands of two batches", rec.mixed)
	}
	trips := 0
	for b, nodes := range rec.trips {
		seen := map[string]bool{}
		for _, n := range nodes {
			if seen[n] {
				t.Fatalf("batch %d reached node %s in two round trips (%v)", b, n, nodes)
			}
			seen[n] = true
		}
		trips += len(nodes)
	}
	if rec.batches >= workers*each {
		t.Fatalf("%d calls went out in %d batches: nothing was coalesced", workers*each, rec.batches)
	}
	t.Logf("%d calls over %d slots: %d batches, %d node round trips", workers*each, slots, rec.batches, trips)
}
