package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/testrig"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// Several hosts: two web processes and one worker, separate OS processes
// with separate data directories, sharing nothing but Redis (a cluster in CI)
// and PostgreSQL, run a sale of every promotion. Nothing is oversold, live
// events cross processes, orders expire on time, everything reaches the
// database, and a worker killed with SIGKILL mid-flush loses and doubles
// nothing once another takes over.
func TestMultiHost(t *testing.T) {
	ctx := context.Background()
	h := sharedHosts(t, "multi-host test")
	h.start("worker-1", ModeWorker)
	web1, web2 := h.start("web-1", ModeWeb), h.start("web-2", ModeWeb)
	store, err := sqldb.Open(ctx, h.db, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	count := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := store.R.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	// Shoppers sign up on either process; each grabs through the other one too.
	var shoppers []string
	for i := 0; i < 24; i++ {
		tok, _ := []*testApp{web1, web2}[i%2].newUser()
		shoppers = append(shoppers, tok)
	}
	merchant, _ := web1.newMerchant()
	rush := func(path string) (won int64) {
		t.Helper()
		var wins atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, tok := range shoppers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if st := []*testApp{web1, web2}[i%2].call("POST", path, tok, nil, nil); st == http.StatusCreated {
					wins.Add(1)
				} else if st != http.StatusConflict {
					t.Errorf("POST %s: %d", path, st)
				}
			}()
		}
		close(start)
		wg.Wait()
		return wins.Load()
	}

	// Goods: a grab on web-1 moves the stock a subscriber of web-2 sees.
	sl := web1.createSlot(merchant, -time.Minute, time.Hour)
	g := web1.createGoods(merchant, sl.ID, 10, 1)
	watcher := dialWS(t, web2.URL, "")
	subscribe(t, watcher, fmt.Sprintf("goods:%d", g.ID))
	if won := rush(fmt.Sprintf("/api/goods/%d/grab", g.ID)); won != 10 {
		t.Fatalf("%d goods grabs won for stock 10", won)
	}
	waitEvent(t, watcher, func(ev map[string]any) bool {
		return ev["type"] == "stock" && num(ev["goods_id"]) == g.ID && num(ev["remaining"]) == 0
	})
	eventually(t, time.Minute, "10 live orders in PostgreSQL", func() bool {
		return count(`SELECT COUNT(*) FROM orders WHERE goods_id = ? AND status = 'unpaid'`, g.ID) == 10
	})

	// Red packet and coupon.
	rp := web2.createRedPacket(merchant, map[string]any{"title": "Hosts", "total_cents": 1000, "count": 10, "mode": "random"})
	if won := rush(fmt.Sprintf("/api/redpackets/%d/grab", rp.ID)); won != 10 {
		t.Fatalf("%d red packet grabs won for 10 shares", won)
	}
	now := time.Now()
	c := web1.couponCreate(merchant, "Hosts", 10, 1, now.Add(-time.Minute), now.Add(time.Hour))
	if won := rush(fmt.Sprintf("/api/coupons/%d/grab", c.ID)); won != 10 {
		t.Fatalf("%d coupon grabs won for stock 10", won)
	}
	eventually(t, time.Minute, "the claims and coupons in PostgreSQL", func() bool {
		return count(`SELECT COUNT(*) FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, rp.ID) == 10 &&
			count(`SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID) == 10
	})
	if n := count(`SELECT COALESCE(SUM(amount_cents), 0) FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, rp.ID); n != 1000 {
		t.Fatalf("claimed shares add up to %d cents of 1000", n)
	}

	// Expiry on time: the unpaid orders (ORDER_TTL) expire, not before their deadline.
	eventually(t, time.Minute, "the orders to expire", func() bool {
		return count(`SELECT COUNT(*) FROM orders WHERE goods_id = ? AND status = 'expired'`, g.ID) == 10
	})
	if early := count(`SELECT COUNT(*) FROM orders WHERE goods_id = ? AND updated_ms < expires_ms`, g.ID); early != 0 {
		t.Fatalf("%d orders expired before their deadline", early)
	}

	// Kill the worker mid-flush: grabs keep coming and flushes keep running
	// when it dies; a new worker on another data directory takes over.
	big := web1.createGoods(merchant, sl.ID, 200, 20)
	var wg sync.WaitGroup
	var won atomic.Int64
	killed := make(chan struct{})
	for i, tok := range shoppers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if j == 5 && i == 0 {
					h.kill("worker-1")
					close(killed)
				}
				if st := []*testApp{web1, web2}[(i+j)%2].call("POST", fmt.Sprintf("/api/goods/%d/grab", big.ID), tok, nil, nil); st == http.StatusCreated {
					won.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	<-killed
	h.start("worker-2", ModeWorker)
	if won.Load() != 200 {
		t.Fatalf("%d grabs won for stock 200", won.Load())
	}
	eventually(t, time.Minute, "the 200 orders in PostgreSQL after the takeover", func() bool {
		return count(`SELECT COUNT(*) FROM orders WHERE goods_id = ?`, big.ID) == 200
	})
	var st statsJSON
	eventually(t, time.Minute, "Redis and PostgreSQL to agree on the 200 orders", func() bool {
		st = web2.stats(merchant, big.ID)
		return st.DB.Unpaid+st.DB.Paid+st.DB.Expired == 200 && st.Unpaid+st.Paid+st.Expired == 200 && len(st.Drift) == 0
	})
	if n := count(`SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?`, big.ID); n != 0 {
		t.Fatalf("%d orders refused by the database after the takeover (doubled)", n)
	}
}

// sharedHosts skips the test (named what) unless DATABASE_URL (PostgreSQL)
// and REDIS_URL give stores that separate processes can share, and returns
// hosts on them running a freshly built binary.
func sharedHosts(t *testing.T, what string) *hosts {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" || os.Getenv("REDIS_URL") == "" {
		t.Skip(what + ": set DATABASE_URL (PostgreSQL) and REDIS_URL (a Redis or Redis Cluster) that separate processes can share")
	}
	if testing.Short() {
		t.Skip(what + " builds the binary and starts processes")
	}
	return &hosts{t: t, bin: buildSeckill(t), db: dbtest.DatabaseURL(t), redis: dbtest.RedisURL(t)}
}

// hosts runs seckill processes as a deployment would, one data directory each.
type hosts struct {
	t         *testing.T
	bin       string
	db, redis string
	procs     map[string]*exec.Cmd
	logs      map[string]string // each host's log file
	addrs     map[string]string // each host's listen address, kept across a restart
	env       []string          // settings of every host started after, over the defaults (ORDER_TTL=10m)
}

// hostsMetricsToken is the METRICS_TOKEN of every host.
const hostsMetricsToken = "multi-host-metrics-token"

// start runs the binary in mode as the named host and, for a process that
// serves HTTP, waits until it is ready; it returns a client of that process
// (nil for a worker). The host connects to PostgreSQL under its name
// (application_name), so pg_stat_activity tells the hosts apart.
func (h *hosts) start(name, mode string) *testApp {
	h.t.Helper()
	dir := filepath.Join(h.t.TempDir(), name)
	if h.addrs == nil {
		h.addrs = map[string]string{}
	}
	addr, ok := h.addrs[name]
	if !ok {
		addr = freeAddr(h.t)
		h.addrs[name] = addr
	}
	dbURL, err := url.Parse(h.db)
	if err != nil {
		h.t.Fatal(err)
	}
	q := dbURL.Query()
	q.Set("application_name", name)
	dbURL.RawQuery = q.Encode()
	cmd := dieWithTest(exec.Command(h.bin, mode))
	cmd.Env = append(os.Environ(),
		"REDIS_URL="+h.redis, "DATABASE_URL="+dbURL.String(), "DB_PATH="+filepath.Join(dir, "seckill.db"), "ADDR="+addr, "METRICS_TOKEN="+hostsMetricsToken,
		"SESSION_SECRET=multi-host-test-session-secret-0123456789", "ADMIN_USERNAME=admin", "ADMIN_PASSWORD="+testAdminPassword,
		"ORDER_TTL=20s", "FLUSH_INTERVAL=100ms", "RATE_GRAB=0", "RATE_AUTH=0", "RATE_IP=0", "DEMO=false")
	cmd.Env = append(cmd.Env, h.env...) // the test's own settings win
	logf, err := os.Create(filepath.Join(h.t.TempDir(), name+".log"))
	if err != nil {
		h.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	if h.procs == nil {
		h.procs, h.logs = map[string]*exec.Cmd{}, map[string]string{}
	}
	h.procs[name], h.logs[name] = cmd, logf.Name()
	h.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) // a host a failed test left stopped
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
		if h.t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			h.t.Logf("%s's log:\n%s", name, b)
		}
	})
	if mode == ModeWorker {
		return nil
	}
	a := &testApp{App: &testrig.App{Main: &Main{Config: Config{AdminUsername: "admin"}}, T: h.t, URL: "http://" + addr, Clock: new(testrig.Clock)}}
	eventually(h.t, 2*time.Minute, name+" to be ready", func() bool {
		res, err := http.Get(a.URL + "/readyz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	return a
}

// signal sends the named host sig (SIGSTOP and SIGCONT: a paused process).
func (h *hosts) signal(name string, sig syscall.Signal) {
	h.t.Helper()
	if err := h.procs[name].Process.Signal(sig); err != nil {
		h.t.Fatal(err)
	}
}

// log is what the named host has written to its log so far.
func (h *hosts) log(name string) string {
	b, _ := os.ReadFile(h.logs[name])
	return string(b)
}

// stop ends the named host with SIGTERM, as a deploy does, and waits for
// it to exit; start runs it again on the same address.
func (h *hosts) stop(name string) {
	h.t.Helper()
	cmd := h.procs[name]
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		h.t.Errorf("%s exited on SIGTERM with %v", name, err)
	}
}

// kill ends the named host with SIGKILL, as a crash would.
func (h *hosts) kill(name string) {
	cmd := h.procs[name]
	cmd.Process.Kill()
	cmd.Wait()
}

// buildSeckill builds this command's binary for the test.
func buildSeckill(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "seckill")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
