// Package dbtest gives tests their own Redis and durable store: a fresh
// logical database of the real redis-server named by REDIS_URL, the whole
// Redis Cluster it names (one test at a time, emptied first), or an embedded
// one; a fresh PostgreSQL database on the server named by DATABASE_URL, or a
// SQLite file in a temp folder.
package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
)

var (
	claims atomic.Int64 // makes each claim's owner unique within the process

	modeOnce sync.Once
	mode     redisMode // what REDIS_URL names, found by the first test that asks
	modeErr  error
)

// redisMode is the kind of Redis the tests run on.
type redisMode int

const (
	embedded redisMode = iota // REDIS_URL unset: miniredis in the process
	server                    // one redis-server: a logical database per test
	cluster                   // a Redis Cluster: the whole cluster per test, one test at a time
)

// claimTTL bounds how long a crashed test run keeps a database claimed; a
// claim lives at least this long, or until the test's deadline when that is later.
const claimTTL = 30 * time.Minute

// RedisURL returns a Redis URL for this test alone: an empty logical database
// of the real server at REDIS_URL; the Redis Cluster at REDIS_URL, emptied
// and held by this test (and its subtests) until it ends; or "" (embedded
// Redis) when REDIS_URL is unset.
func RedisURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("REDIS_URL")
	ctx, cancel := testContext(t)
	defer cancel()
	switch detectMode(ctx, base) {
	case embedded:
		return ""
	case cluster:
		if err := holdCluster(ctx, t, base); err != nil {
			t.Fatal(err)
		}
		return base
	}
	if modeErr != nil {
		t.Fatalf("REDIS_URL: %v", modeErr)
	}
	opt, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	// Packages run in parallel against one server, so each test claims a
	// logical database of its own (.ci/run starts redis-server with many of
	// them); DB 0 keeps the claims and is never handed out.
	adminOpt := *opt
	adminOpt.DB = 0
	admin := redis.NewClient(&adminOpt)
	dbs := 16
	if v, err := admin.ConfigGet(ctx, "databases").Result(); err == nil {
		fmt.Sscan(v["databases"], &dbs)
	}
	ttl := claimTTL
	if d, ok := deadline(t); ok && time.Until(d)+time.Minute > ttl {
		ttl = time.Until(d) + time.Minute
	}
	c := &claimer{admin: admin, prefix: "dbtest:claim:", dbs: dbs, ttl: ttl}
	owner := fmt.Sprintf("%d/%s/%d", os.Getpid(), t.Name(), claims.Add(1))
	idx, err := c.claim(ctx, owner)
	if err != nil {
		admin.Close()
		t.Fatalf("claim a redis db: %v", err)
	}
	// Registered before the test opens its clients, so it runs after they close.
	t.Cleanup(func() {
		defer admin.Close()
		if err := c.release(context.Background(), idx, owner); err != nil {
			t.Errorf("release redis db %d: %v", idx, err)
		}
	})
	opt.DB = idx
	db := redis.NewClient(opt)
	defer db.Close()
	if err := db.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("flush redis db %d: %v", idx, err)
	}
	u := strings.TrimRight(base, "/")
	if i := strings.LastIndex(u, "/"); i > len("redis://") {
		u = u[:i]
	}
	return fmt.Sprintf("%s/%d", u, idx)
}

// deadline is the test's deadline, when t has one (a *testing.T under go test -timeout).
func deadline(t testing.TB) (time.Time, bool) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return d.Deadline()
	}
	return time.Time{}, false
}

// testContext ends at the test's deadline, or after claimTTL when it has none.
func testContext(t testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := deadline(t); ok {
		return context.WithDeadline(context.Background(), d)
	}
	return context.WithTimeout(context.Background(), claimTTL)
}

// claimer hands out logical databases 1..dbs-1 of one server, each to one
// owner at a time, through keys prefix+index in the admin client's database.
type claimer struct {
	admin  *redis.Client
	prefix string
	dbs    int
	ttl    time.Duration
	full   func() // when set, called each time every index was taken, before waiting
}

// claim takes a free index for owner, waiting (with backoff) while every
// index is taken, until ctx ends.
func (c *claimer) claim(ctx context.Context, owner string) (int, error) {
	n := c.dbs - 1
	if n < 1 {
		return 0, fmt.Errorf("server has %d databases, need at least 2", c.dbs)
	}
	wait := 10 * time.Millisecond
	for {
		// Lowest free index first: SET NX alone decides between concurrent
		// claims; a claim costs one round trip per database others hold.
		for idx := 1; idx <= n; idx++ {
			ok, err := c.admin.SetNX(ctx, c.prefix+strconv.Itoa(idx), owner, c.ttl).Result()
			if err != nil {
				return 0, fmt.Errorf("claim db %d: %w", idx, err)
			}
			if ok {
				return idx, nil
			}
		}
		if c.full != nil {
			c.full()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("all %d databases stayed claimed: %w", n, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// release gives idx back when owner still holds it, so a claim that expired
// and was taken by another test stays with that test.
func (c *claimer) release(ctx context.Context, idx int, owner string) error {
	_, err := rdb.ReleaseOwned(ctx, c.admin, c.prefix+strconv.Itoa(idx), owner)
	return err
}

// Redis opens a Redis for this test alone and closes it when the test ends.
// Its commands wait for a free connection as long as the test may run (a
// race of thousands on a busy machine queues for the pool; a wait is no
// failure here, as it would be for a grab in production).
// In a test (not a benchmark, which measures the client as it runs in
// production) its client refuses a command whose keys lie in two cluster
// slots and fails the test, on every kind of Redis.
func Redis(t testing.TB) *rdb.Redis {
	t.Helper()
	// A test's commands may wait for a connection and a reply as long as the
	// test may run (on a busy machine an embedded Redis shares the cores).
	patience := claimTTL
	if d, ok := deadline(t); ok {
		patience = time.Until(d)
	}
	r, err := rdb.Open(context.Background(), RedisURL(t), rdb.Patience(patience))
	if err != nil {
		t.Fatal(err)
	}
	r.Loop().Start() // the embedded server's clock, which Main starts in a process
	t.Cleanup(func() { r.Close() })
	if _, bench := t.(*testing.B); !bench {
		GuardSlots(t, r.Client)
	}
	return r
}

// sqliteDB opens a migrated SQLite file in a temp folder and closes it when
// the test ends.
func sqliteDB(t testing.TB) *sqldb.DB {
	t.Helper()
	s, err := sqldb.OpenSQLite(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
