// Package dbtest gives tests their own Redis and SQLite: a fresh logical
// database of the real redis-server named by REDIS_URL, or an embedded one.
package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
)

var announce sync.Once

// RedisURL returns a Redis URL for this test alone: an empty logical database
// of the real server at REDIS_URL, or "" (embedded Redis) when REDIS_URL is unset.
func RedisURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("REDIS_URL")
	announce.Do(func() {
		if base == "" {
			fmt.Fprintln(os.Stderr, "dbtest: REDIS_URL unset, tests use the embedded Redis (miniredis)")
		} else {
			fmt.Fprintf(os.Stderr, "dbtest: tests use the real Redis at %s\n", base)
		}
	})
	if base == "" {
		return ""
	}
	ctx := context.Background()
	opt, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	admin := redis.NewClient(opt)
	defer admin.Close()
	// Packages run in parallel against one server, so each test takes its own
	// logical database (.ci/run starts redis-server with many of them).
	n, err := admin.Incr(ctx, "dbtest:next-db").Result()
	if err != nil {
		t.Fatalf("allocate redis db: %v", err)
	}
	var dbs int64 = 16
	if v, err := admin.ConfigGet(ctx, "databases").Result(); err == nil {
		fmt.Sscan(v["databases"], &dbs)
	}
	idx := 1 + n%(dbs-1)
	opt.DB = int(idx)
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("flush redis db %d: %v", idx, err)
	}
	u := strings.TrimRight(base, "/")
	if i := strings.LastIndex(u, "/"); i > len("redis://") {
		u = u[:i]
	}
	return fmt.Sprintf("%s/%d", u, idx)
}

// Redis opens a Redis for this test alone and closes it when the test ends.
func Redis(t testing.TB) *db.Redis {
	t.Helper()
	r, err := db.OpenRedis(context.Background(), RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// SQLite opens a migrated database file in a temp folder and closes it when the test ends.
func SQLite(t testing.TB) *db.SQLite {
	t.Helper()
	s, err := db.OpenSQLite(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
