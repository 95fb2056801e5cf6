package rdb_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// incrScript is a durable change for the tests: it counts a key up.
var incrScript = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

// waits is how many WAIT commands the server has run.
func waits(t *testing.T, s *dbtest.Server) int {
	t.Helper()
	info := s.Client.Info(context.Background(), "commandstats").Val()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
			n, _ := strconv.Atoi(v[:strings.IndexByte(v, ',')])
			return n
		}
	}
	return 0
}

// pipelinerOn opens a pipeliner on the server whose durable commands wait
// for replicas, for as long as the setting allows (2 s): a healthy replica
// confirms within it however busy the machine, a stopped one never does.
func pipelinerOn(t *testing.T, s *dbtest.Server, replicas int) *rdb.Pipeliner {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	p := rdb.NewPipeliner(c, 1)
	p.SetWait(replicas, 2*time.Second)
	p.Loops().Start()
	t.Cleanup(func() { p.Close(); c.Close() })
	return p
}

// Where the master has a replica, a durable change is answered once the
// replica confirmed it, and hundreds released at once share a few WAITs
// (one per batch, not one per change).
func TestWaitForReplica(t *testing.T) {
	ctx := context.Background()
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	p := pipelinerOn(t, master, rdb.AutoReplicas)
	const n = 300
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- incrScript.Run(rdb.Durable(ctx), p.Client(), []string{"{t}:n"}).Err()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("durable change with a replica connected: %v", err)
		}
	}
	if got := replica.Client.Get(ctx, "{t}:n").Val(); got != strconv.Itoa(n) {
		t.Fatalf("the replica holds %q after %d acknowledged changes", got, n)
	}
	w := waits(t, master)
	if w == 0 || w > n/2 {
		t.Fatalf("%d WAITs for %d durable changes released at once, want at least one and one per batch", w, n)
	}
	t.Logf("%d durable changes, %d WAITs", n, w)
	// A change that needs no replica sends no WAIT.
	if err := incrScript.Run(ctx, p.Client(), []string{"{t}:plain"}).Err(); err != nil {
		t.Fatal(err)
	}
	if got := waits(t, master); got != w {
		t.Fatalf("a change not marked durable sent %d WAITs", got-w)
	}
}

// A replica that lags (stopped) makes the durable change fail with 503
// unavailable instead of an acknowledgement a failover could take back;
// changes not marked durable go on, and once it catches up, so do durable ones.
func TestWaitReplicaLagging(t *testing.T) {
	ctx := context.Background()
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	p := pipelinerOn(t, master, rdb.AutoReplicas)
	replica.Signal(syscall.SIGSTOP)
	err := incrScript.Run(rdb.Durable(ctx), p.Client(), []string{"{t}:n"}).Err()
	if !errors.Is(err, rdb.ErrNotReplicated) || db.ErrorCode(err) != db.EUNAVAILABLE {
		t.Fatalf("durable change while the replica is stopped: %v, want ErrNotReplicated (unavailable)", err)
	}
	// A write that answers nil (SET NX GET of a new key) is not taken for
	// a refusal that wrote nothing.
	err = p.Client().SetArgs(rdb.Durable(ctx), "{t}:spent", "me", redis.SetArgs{Mode: "NX", Get: true}).Err()
	if !errors.Is(err, rdb.ErrNotReplicated) {
		t.Fatalf("durable SET NX GET of a new key while the replica is stopped: %v, want ErrNotReplicated", err)
	}
	if err := incrScript.Run(ctx, p.Client(), []string{"{t}:plain"}).Err(); err != nil {
		t.Fatalf("a change not marked durable while the replica is stopped: %v", err)
	}
	replica.Signal(syscall.SIGCONT)
	for {
		err := incrScript.Run(rdb.Durable(ctx), p.Client(), []string{"{t}:n"}).Err()
		if err == nil {
			break
		}
		if !errors.Is(err, rdb.ErrNotReplicated) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With auto, a master without replicas acknowledges at once and sends no
// WAIT; a master whose replica died is read again and stops waiting for it.
// A fixed number of replicas that are not there is refused.
func TestWaitAutoWithoutReplicas(t *testing.T) {
	ctx := context.Background()
	master := dbtest.StartServer(t)
	p := pipelinerOn(t, master, rdb.AutoReplicas)
	if err := incrScript.Run(rdb.Durable(ctx), p.Client(), []string{"{t}:n"}).Err(); err != nil {
		t.Fatal(err)
	}
	if w := waits(t, master); w != 0 {
		t.Fatalf("%d WAITs on a master without replicas", w)
	}
	fixed := pipelinerOn(t, master, 1)
	if err := incrScript.Run(rdb.Durable(ctx), fixed.Client(), []string{"{t}:n"}).Err(); !errors.Is(err, rdb.ErrNotReplicated) {
		t.Fatalf("REDIS_WAIT_REPLICAS=1 without a replica: %v, want ErrNotReplicated", err)
	}
	if got := [4]int64{p.WaitsShort(), p.NotReplicated(), fixed.WaitsShort(), fixed.NotReplicated()}; got != [4]int64{0, 0, 1, 1} {
		t.Fatalf("waits short and commands not replicated (auto, fixed) = %v, want [0 0 1 1]", got)
	}

	// The replica dies: the change fails until the master's count is read
	// again (at once after a wait fell short), then goes through without WAIT.
	replica := master.StartReplica()
	withReplica := pipelinerOn(t, master, rdb.AutoReplicas)
	if err := incrScript.Run(rdb.Durable(ctx), withReplica.Client(), []string{"{t}:n"}).Err(); err != nil {
		t.Fatal(err)
	}
	replica.Signal(syscall.SIGKILL)
	for i := 0; ; i++ {
		err := incrScript.Run(rdb.Durable(ctx), withReplica.Client(), []string{"{t}:n"}).Err()
		if err == nil {
			break
		}
		if !errors.Is(err, rdb.ErrNotReplicated) {
			t.Fatal(fmt.Errorf("after the replica died: %w", err))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A master whose replica count cannot be read for a while (busy, a command
// refused) keeps the count last read: its changes still wait for the
// replica, and fail while it lags, rather than pass unconfirmed.
func TestWaitKeepsCountWhenUnread(t *testing.T) {
	ctx := context.Background()
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	p := pipelinerOn(t, master, rdb.AutoReplicas)
	if err := incrScript.Run(rdb.Durable(ctx), p.Client(), []string{"{t}:n"}).Err(); err != nil {
		t.Fatal(err)
	}
	// From now on the pipeliner's INFO is refused (NOPERM).
	if err := master.Client.Do(ctx, "ACL", "SETUSER", "default", "-info").Err(); err != nil {
		t.Fatal(err)
	}
	replica.Signal(syscall.SIGSTOP)
	for i := 0; i < 3; i++ { // each failed wait asks for a fresh reading, which is refused
		if err := incrScript.Run(rdb.Durable(ctx), p.Client(), []string{"{t}:n"}).Err(); !errors.Is(err, rdb.ErrNotReplicated) {
			t.Fatalf("durable change %d while the replica lags and the count cannot be read: %v, want ErrNotReplicated", i, err)
		}
	}
	replica.Signal(syscall.SIGCONT)
}

// memoIncr is a keyed durable change: it counts KEYS[1] up once per key,
// remembering its answer under KEYS[2] (db.Memoize).
var memoIncr = redis.NewScript(db.Memoize(`return tostring(redis.call('INCR', KEYS[1]))`, "true"))

// A keyed change replayed on a connection that wrote nothing (another
// process's) is answered only once the original change is on a replica:
// the replay writes, and its WAIT covers the original.
func TestMemoReplayWaitsForReplica(t *testing.T) {
	ctx := context.Background()
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	first, other := pipelinerOn(t, master, rdb.AutoReplicas), pipelinerOn(t, master, rdb.AutoReplicas)
	keys := []string{"{t}:n", "{t}:memo"}
	// The other's connection is open before the original change (a pooled
	// connection that has written nothing since: its WAIT would pass at once).
	if err := incrScript.Run(rdb.Durable(ctx), other.Client(), []string{"{t}:warm"}).Err(); err != nil {
		t.Fatal(err)
	}
	replica.Signal(syscall.SIGSTOP)
	if err := memoIncr.Run(rdb.Durable(ctx), first.Client(), keys, 60000).Err(); !errors.Is(err, rdb.ErrNotReplicated) {
		t.Fatalf("keyed change while the replica is stopped: %v, want ErrNotReplicated", err)
	}
	if n, err := memoIncr.Run(rdb.Durable(ctx), other.Client(), keys, 60000).Int(); !errors.Is(err, rdb.ErrNotReplicated) {
		t.Fatalf("its replay on a fresh connection while the replica is stopped: %d %v, want ErrNotReplicated", n, err)
	}
	replica.Signal(syscall.SIGCONT)
	for {
		n, err := memoIncr.Run(rdb.Durable(ctx), other.Client(), keys, 60000).Int()
		if err == nil {
			if n != 1 || replica.Client.Get(ctx, "{t}:n").Val() != "1" {
				t.Fatalf("replayed after the replica came back: %d (replica holds %q), want the first answer 1", n, replica.Client.Get(ctx, "{t}:n").Val())
			}
			break
		}
		if !errors.Is(err, rdb.ErrNotReplicated) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
