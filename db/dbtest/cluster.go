package dbtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/rdb"
)

// detectMode finds, once per test process, what REDIS_URL names, and says
// which backend the tests use and how they are kept apart.
func detectMode(ctx context.Context, base string) redisMode {
	modeOnce.Do(func() {
		if base == "" {
			mode = embedded
			fmt.Fprintln(os.Stderr, "dbtest: REDIS_URL unset, tests use the embedded Redis (miniredis)")
			return
		}
		mode = server
		r, err := rdb.Open(ctx, base)
		if err != nil {
			modeErr = err
			return
		}
		defer r.Close()
		if !r.Cluster {
			fmt.Fprintf(os.Stderr, "dbtest: tests use the real Redis at %s, each test in a logical database of its own\n", base)
			return
		}
		mode = cluster
		var masters atomic.Int64
		rdb.ForEachServer(ctx, r.Client, func(context.Context, *redis.Client) error { masters.Add(1); return nil })
		fmt.Fprintf(os.Stderr, "dbtest: tests use the Redis Cluster at %s (%d masters); a cluster has no logical databases, "+
			"so one test at a time holds it (test processes take turns through %s; run packages one at a time, go test -p 1, "+
			"so that none waits) and each starts by flushing every master\n", base, masters.Load(), clusterLockPath(base))
	})
	return mode
}

// clusterLockPath is the file whose lock the test processes sharing one cluster take turns on.
func clusterLockPath(base string) string {
	h := fnv.New64a()
	h.Write([]byte(base))
	return filepath.Join(os.TempDir(), fmt.Sprintf("seckill-dbtest-cluster-%x.lock", h.Sum64()))
}

// held is the cluster's holder in this process: one test, shared with its
// subtests, until the test that took it ends.
var held struct {
	mu     sync.Mutex
	holder string        // name of the test holding the cluster, "" when free
	refs   int           // the holder and its subtests that asked for it
	free   chan struct{} // closed when the holder lets go
	unlock func()        // lets the other test processes have the cluster
}

// holdCluster waits until no other test (in this process or another) holds
// the cluster at base, takes it for t until t ends and empties it. The
// holder, or a subtest of it, asking again shares the hold and gets the
// cluster emptied again, as each ask on one server gets a fresh database
// (so parallel subtests of one holder must not each ask).
func holdCluster(ctx context.Context, t testing.TB, base string) error {
	for {
		held.mu.Lock()
		if held.holder == "" {
			held.holder, held.refs, held.free = t.Name(), 1, make(chan struct{})
			held.mu.Unlock()
			t.Cleanup(releaseCluster)
			unlock, err := lockFile(ctx, clusterLockPath(base), func() {
				t.Logf("dbtest: waiting for another test process to let go of the Redis Cluster (%s)", clusterLockPath(base))
			})
			if err != nil {
				return fmt.Errorf("take the redis cluster: %w", err)
			}
			held.mu.Lock()
			held.unlock = unlock
			held.mu.Unlock()
			return flushCluster(ctx, base)
		}
		if t.Name() == held.holder || strings.HasPrefix(t.Name(), held.holder+"/") {
			held.refs++
			held.mu.Unlock()
			t.Cleanup(releaseCluster)
			return flushCluster(ctx, base)
		}
		free := held.free
		held.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return fmt.Errorf("test %s held the redis cluster until this test's deadline: %w", held.holder, ctx.Err())
		}
	}
}

// releaseCluster lets go of one hold; the last lets other tests have the cluster.
func releaseCluster() {
	held.mu.Lock()
	defer held.mu.Unlock()
	if held.refs--; held.refs > 0 {
		return
	}
	if held.unlock != nil {
		held.unlock()
		held.unlock = nil
	}
	held.holder = ""
	close(held.free)
}

// flushCluster empties every master of the cluster at base.
func flushCluster(ctx context.Context, base string) error {
	r, err := rdb.Open(ctx, base)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := rdb.FlushDB(ctx, r.Client); err != nil {
		return fmt.Errorf("flush the redis cluster: %w", err)
	}
	return nil
}
