package dbtest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Claims hand each owner a database of its own, and a claim made while
// every database is taken waits for a release instead of sharing one.
func TestClaimsAreDistinctAndWaitForRelease(t *testing.T) {
	full := make(chan struct{}, 1)
	c, admin, prefix := testClaimer(t, func() {
		select {
		case full <- struct{}{}:
		default:
		}
	})
	dbs := c.dbs
	ctx, cancel := testContext(t)
	defer cancel()

	type result struct {
		idx int
		err error
	}
	start := make(chan struct{})
	results := make(chan result, dbs-1)
	for i := 0; i < dbs-1; i++ {
		go func(i int) {
			<-start
			idx, err := c.claim(ctx, fmt.Sprintf("owner-%d", i))
			results <- result{idx, err}
		}(i)
	}
	close(start)
	holders := map[int]int{} // index → how many claims returned it
	for i := 0; i < dbs-1; i++ {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		holders[r.idx]++
	}
	for idx := 1; idx < dbs; idx++ {
		if holders[idx] != 1 {
			t.Errorf("db %d handed to %d owners, want 1 (all: %v)", idx, holders[idx], holders)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	select {
	case <-full:
		t.Fatal("a claim found every database taken while one was still free")
	default:
	}

	// Every database is taken: a further claim must wait for a release.
	late := make(chan result, 1)
	go func() {
		idx, err := c.claim(ctx, "late")
		late <- result{idx, err}
	}()
	select {
	case r := <-late:
		t.Fatalf("claim returned db %d (err %v) while every database was taken", r.idx, r.err)
	case <-full:
	}
	// A release by someone who does not hold the claim leaves it in place.
	key := prefix + "3"
	holder, err := admin.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.release(ctx, 3, "not-"+holder); err != nil {
		t.Fatal(err)
	}
	if got, err := admin.Get(ctx, key).Result(); err != nil || got != holder {
		t.Fatalf("after a stranger's release db 3 is held by %q (err %v), want %q", got, err, holder)
	}
	select {
	case r := <-late:
		t.Fatalf("claim returned db %d (err %v) before any release", r.idx, r.err)
	default:
	}
	if err := c.release(ctx, 3, holder); err != nil {
		t.Fatal(err)
	}
	if r := <-late; r.err != nil || r.idx != 3 {
		t.Fatalf("late claim got db %d (err %v), want the released db 3", r.idx, r.err)
	}

	// A claim that finds everything taken gives up when its context ends.
	gone, stop := context.WithCancel(ctx)
	select { // drop a signal the late claim may have left
	case <-full:
	default:
	}
	failed := make(chan error, 1)
	go func() {
		_, err := c.claim(gone, "gives-up")
		failed <- err
	}()
	<-full
	stop()
	if err := <-failed; err == nil {
		t.Fatal("claim with every database taken returned no error after its context ended")
	}
}

// testClaimer gives a claimer on the real Redis at REDIS_URL with a key
// prefix of its own and a pretend server of 8 databases, so the test
// exercises the claims without holding any database other tests need.
func testClaimer(t *testing.T, full func()) (*claimer, *redis.Client, string) {
	t.Helper()
	base := os.Getenv("REDIS_URL")
	if base == "" {
		t.Skip("REDIS_URL unset: the claim tests need a real redis-server (REDIS_URL=redis://127.0.0.1:6399)")
	}
	if detectMode(t.Context(), base) == cluster {
		t.Skip("REDIS_URL is a Redis Cluster, which has no logical databases to claim")
	}
	opt, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	opt.DB = 0
	admin := redis.NewClient(opt)
	prefix := fmt.Sprintf("dbtest-test:%d:%s:", os.Getpid(), t.Name())
	t.Cleanup(func() {
		defer admin.Close()
		keys, _ := admin.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			admin.Del(context.Background(), keys...)
		}
	})
	return &claimer{admin: admin, prefix: prefix, dbs: 8, ttl: claimTTL, full: full}, admin, prefix
}
