package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/testrig"
	"github.com/seckill/seckill/db/sqldb"
)

// shippedHAProxy is the balancer configuration the operators' guide ships.
const shippedHAProxy = "../../docs/ops/haproxy.cfg"

// renderHAProxy is the shipped configuration with the test's front and stats
// addresses and its web processes (name → address) for the example servers:
// everything else is the file as shipped.
func renderHAProxy(t *testing.T, front, stats string, servers [][2]string) string {
	t.Helper()
	raw, err := os.ReadFile(shippedHAProxy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	replace := func(old, new string) {
		t.Helper()
		if strings.Count(cfg, old) != 1 {
			t.Fatalf("docs/ops/haproxy.cfg: want exactly one %q to put the test's own in", old)
		}
		cfg = strings.Replace(cfg, old, new, 1)
	}
	replace("    bind :80\n", "    bind "+front+"\n")
	replace("    bind 127.0.0.1:8404\n", "    bind "+stats+"\n")
	begin, end := strings.Index(cfg, "    # BEGIN web servers\n"), strings.Index(cfg, "    # END web servers\n")
	if begin < 0 || end < begin {
		t.Fatal("docs/ops/haproxy.cfg: no \"# BEGIN web servers\" … \"# END web servers\" block")
	}
	var lines strings.Builder
	lines.WriteString("    # BEGIN web servers\n")
	for _, s := range servers {
		fmt.Fprintf(&lines, "    server %s %s check\n", s[0], s[1])
	}
	cfg = cfg[:begin] + lines.String() + cfg[end:]
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// haproxyStates reads the web servers' states (UP, DOWN, …) from the stats page.
func haproxyStates(stats string) map[string]string {
	res, err := http.Get("http://" + stats + "/stats;csv")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(res.Body)
	status := -1
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if strings.HasPrefix(sc.Text(), "# ") {
			for i, name := range f {
				if name == "status" {
					status = i
				}
			}
			continue
		}
		if status >= 0 && len(f) > status && f[0] == "seckill_web" && f[1] != "BACKEND" {
			out[f[1]] = f[status]
		}
	}
	return out
}

// A rolling restart of every process mid-sale, through the shipped HAProxy
// configuration (docs/ops/haproxy.cfg): each web process in turn gets
// SIGTERM, is out of the rotation (health checks on /readyz), is started
// again and is back in it before the next; then the worker. The shoppers' client talks to
// HAProxy only and sees no 5xx and no dropped connection; every acknowledged
// order is durable as its shopper's and the stock is sold once.
func TestRollingRestartBehindHAProxy(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("rolling restart test: haproxy is not on PATH (apt-get install haproxy)")
	}
	h := sharedHosts(t, "rolling restart behind HAProxy")
	h.env = []string{"ORDER_TTL=10m", "TRUSTED_PROXIES=127.0.0.1"}
	web1, _ := h.start("web-1", ModeWeb), h.start("web-2", ModeWeb)
	h.start("worker-1", ModeWorker)

	front, stats := freeAddr(t), freeAddr(t)
	cfg := renderHAProxy(t, front, stats, [][2]string{{"web1", h.addrs["web-1"]}, {"web2", h.addrs["web-2"]}})
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	proxy := dieWithTest(exec.Command(bin, "-db", "-f", cfg))
	logf, err := os.Create(filepath.Join(t.TempDir(), "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Stdout, proxy.Stderr = logf, logf
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.Process.Kill()
		proxy.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("haproxy's log:\n%s", b)
		}
	})
	inRotation := func(server string) {
		t.Helper()
		eventually(t, time.Minute, server+" in HAProxy's rotation", func() bool { return haproxyStates(stats)[server] == "UP" })
	}
	outOfRotation := func(server string) {
		t.Helper()
		eventually(t, time.Minute, server+" out of HAProxy's rotation", func() bool { return strings.HasPrefix(haproxyStates(stats)[server], "DOWN") })
	}
	inRotation("web1")
	inRotation("web2")

	lb := &testApp{App: &testrig.App{Main: &Main{Config: Config{AdminUsername: "admin"}}, T: t, URL: "http://" + front, Clock: new(testrig.Clock)}}
	// A live socket upgrades through the balancer.
	ws := dialWS(t, lb.URL, "")
	ws.Close()
	store, err := sqldb.Open(context.Background(), h.db, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	merchant, _ := lb.newMerchant()
	const stock = 12000
	g := lb.createGoods(merchant, lb.createSlot(merchant, -time.Minute, time.Hour).ID, stock, 1000)
	toks := shoppers(web1, 40)

	var restartedAt, doneAt int64
	// The last hundred units wait for the restarts: the sale is under way
	// from the first restart to the last, however slow the machine.
	s := sellOutHolding(t, []*testApp{lb}, toks, g.ID, 16, 5*time.Millisecond, stock-100, func(s *sale) {
		eventually(t, 2*time.Minute, "the sale under way", func() bool { return s.orders.Load() >= 500 })
		restartedAt = s.orders.Load()
		// Each web process is out of the rotation before it comes back (a
		// deploy that replaces it takes longer than the health checks).
		for _, w := range [][2]string{{"web-1", "web1"}, {"web-2", "web2"}} {
			h.stop(w[0])
			outOfRotation(w[1])
			h.start(w[0], ModeWeb)
			inRotation(w[1])
		}
		h.stop("worker-1")
		h.start("worker-1", ModeWorker)
		doneAt = s.orders.Load()
	})
	t.Logf("every process restarted between orders %d and %d of %d; answers by status %v", restartedAt, doneAt, stock, s.statuses)
	if doneAt >= stock {
		t.Errorf("the sale ended before the restarts did: the test did not test the restart mid-sale")
	}
	for st, n := range s.statuses {
		if st == 0 || st >= 500 {
			t.Errorf("%d answers with status %d (0: no answer) through the balancer during the rolling restart", n, st)
		}
	}
	holdsEveryPromise(t, store, g.ID, stock, s)
}
