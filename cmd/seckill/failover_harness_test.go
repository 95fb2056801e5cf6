package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis Cluster of its own for failover tests: three masters, each with one
// replica, as separate redis-server processes the test may kill (SIGKILL) or
// pause (SIGSTOP), with the node timeout of the colleague's measurement
// (1.5 s), so a replica takes over a dead master's slots within seconds.

// failoverNodeTimeout is the cluster's node timeout (ms): how long a master
// may be unreachable before the others mark it failed and its replica takes over.
const failoverNodeTimeout = 1500

// needRedisBinaries skips the test unless redis-server and redis-cli are on PATH.
func needRedisBinaries(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("failover test: %s is not on PATH; it starts a Redis Cluster of its own (apt-get install redis-server)", bin)
		}
	}
}

// redisCluster is a throw-away Redis Cluster of six redis-server processes
// on loopback: three masters and three replicas.
type redisCluster struct {
	t     *testing.T
	dir   string
	ports []int
	procs map[int]*exec.Cmd
	admin map[int]*redis.Client // one plain client per node, for CLUSTER and INFO
}

// startRedisCluster starts six nodes, joins them as three masters with one
// replica each and waits until every node says cluster_state:ok and every
// master has an online replica. The nodes are shut down at the test's end.
func startRedisCluster(t *testing.T) *redisCluster {
	t.Helper()
	needRedisBinaries(t)
	c := &redisCluster{t: t, dir: t.TempDir(), ports: freeClusterPorts(t, 6), procs: map[int]*exec.Cmd{}, admin: map[int]*redis.Client{}}
	t.Cleanup(c.shutdown)
	for _, p := range c.ports {
		c.startNode(p)
	}
	args := []string{"--cluster", "create"}
	for _, p := range c.ports {
		args = append(args, "127.0.0.1:"+strconv.Itoa(p))
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitHealthy(2 * time.Minute)
	return c
}

// freeClusterPorts picks n loopback ports that are free, with their cluster
// bus ports (port + 10000) free too. Both lie below Linux's ephemeral range
// (32768 and up): a port free when picked there can be taken by any
// outgoing connection of the tests running alongside before redis-server
// binds it (a CI run lost a node's bus port so).
func freeClusterPorts(t *testing.T, n int) []int {
	t.Helper()
	free := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
		return true
	}
	var ports []int
	seen := map[int]bool{}
	for tries := 0; len(ports) < n; tries++ {
		if tries > 10000 {
			t.Fatalf("no %d free port pairs (port, port+10000) on loopback", n)
		}
		p := 10000 + rand.IntN(12700) // p + 10000 < 32768
		if seen[p] || seen[p+10000] || seen[p-10000] {
			continue
		}
		if free(p) && free(p+10000) {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports
}

// startNode runs one cluster-enabled redis-server in the foreground (so the
// test holds its process) with its own folder, and waits until it answers.
func (c *redisCluster) startNode(port int) {
	c.t.Helper()
	dir := filepath.Join(c.dir, strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port),
		"--cluster-node-timeout", strconv.Itoa(failoverNodeTimeout), "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start redis-server on %d: %v", port, err)
	}
	c.procs[port] = cmd
	c.admin[port] = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port),
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1, PoolSize: 2})
	eventually(c.t, 30*time.Second, fmt.Sprintf("redis-server on %d to answer", port), func() bool {
		return c.admin[port].Ping(context.Background()).Err() == nil
	})
}

// URL is a REDIS_URL listing every node, as a deployment lists its cluster's hosts.
func (c *redisCluster) URL() string {
	hosts := make([]string, len(c.ports))
	for i, p := range c.ports {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return "redis://" + strings.Join(hosts, ",")
}

// live lists the ports of the nodes whose process has not ended (a paused
// one included: the admin calls to it time out and go on to the next).
func (c *redisCluster) live() []int {
	var out []int
	for _, p := range c.ports {
		if cmd := c.procs[p]; cmd != nil && cmd.ProcessState == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitHealthy waits until every live node reports cluster_state:ok and
// knows all slots, and every master has an online replica.
func (c *redisCluster) waitHealthy(within time.Duration) {
	c.t.Helper()
	ctx := context.Background()
	eventually(c.t, within, "the Redis Cluster to be ok with a replica per master", func() bool {
		masters := 0
		for _, p := range c.live() {
			info, err := c.admin[p].ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return false
			}
			repl, err := c.admin[p].Info(ctx, "replication").Result()
			if err != nil {
				return false
			}
			if strings.Contains(repl, "role:master") {
				masters++
				if !strings.Contains(repl, "connected_slaves:1") || !strings.Contains(repl, "state=online") {
					return false
				}
			}
		}
		return masters == 3
	})
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, master string // master: the ID of the node it replicates ("-" for a master)
	port       int
	flags      string
	slots      [][2]int
}

// nodes reads CLUSTER NODES from a live node.
func (c *redisCluster) nodes() []clusterNode {
	c.t.Helper()
	var raw string
	var err error
	for _, p := range c.live() {
		if raw, err = c.admin[p].ClusterNodes(context.Background()).Result(); err == nil {
			break
		}
	}
	if err != nil || raw == "" {
		c.t.Fatalf("CLUSTER NODES: %v", err)
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		_, port, _ := strings.Cut(addr, ":")
		n := clusterNode{id: f[0], flags: f[2], master: f[3]}
		n.port, _ = strconv.Atoi(port)
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") { // a slot being migrated
				continue
			}
			lo, hi, ok := strings.Cut(s, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if ok {
				b, _ = strconv.Atoi(hi)
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out
}

// keySlot is the cluster slot of key, as the cluster computes it (CLUSTER KEYSLOT).
func (c *redisCluster) keySlot(key string) int {
	c.t.Helper()
	for _, p := range c.live() {
		if slot, err := c.admin[p].ClusterKeySlot(context.Background(), key).Result(); err == nil {
			return int(slot)
		}
	}
	c.t.Fatalf("CLUSTER KEYSLOT %s: no node answers", key)
	return 0
}

// ownerOf returns the port of the master holding key's slot and of its replica.
func (c *redisCluster) ownerOf(key string) (master, replica int) {
	c.t.Helper()
	slot := c.keySlot(key)
	nodes := c.nodes()
	var id string
	for _, n := range nodes {
		if !strings.Contains(n.flags, "master") || strings.Contains(n.flags, "fail") {
			continue
		}
		for _, r := range n.slots {
			if slot >= r[0] && slot <= r[1] {
				id, master = n.id, n.port
			}
		}
	}
	for _, n := range nodes {
		if id != "" && n.master == id && !strings.Contains(n.flags, "fail") {
			replica = n.port
		}
	}
	if master == 0 || replica == 0 {
		c.t.Fatalf("no master with a replica holds slot %d of %s:\n%+v", slot, key, nodes)
	}
	return master, replica
}

// kill ends the node with SIGKILL, as a crash of its host would.
func (c *redisCluster) kill(port int) {
	c.t.Helper()
	cmd := c.procs[port]
	if err := cmd.Process.Kill(); err != nil {
		c.t.Fatalf("kill redis-server %d: %v", port, err)
	}
	cmd.Wait()
}

// stop pauses the node (SIGSTOP): it holds its connections and answers nothing.
func (c *redisCluster) stop(port int) { c.signal(port, syscall.SIGSTOP) }

// cont resumes a paused node (SIGCONT).
func (c *redisCluster) cont(port int) { c.signal(port, syscall.SIGCONT) }

func (c *redisCluster) signal(port int, sig syscall.Signal) {
	c.t.Helper()
	if err := c.procs[port].Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to redis-server %d: %v", sig, port, err)
	}
}

// role is the node's INFO replication role (master or slave), "" when it does not answer.
func (c *redisCluster) role(port int) string {
	info, err := c.admin[port].Info(context.Background(), "replication").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return r
		}
	}
	return ""
}

// waitPromotion waits until the replica reports role:master and returns
// when it was first seen so (polled every 10 ms): the promotion as an event.
func (c *redisCluster) waitPromotion(replica int, within time.Duration) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c.role(replica) == "master" {
			return time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("replica %d was not promoted within %s", replica, within)
	return time.Time{}
}

// shutdown stops every node: SHUTDOWN NOSAVE, else SIGKILL.
func (c *redisCluster) shutdown() {
	for _, p := range c.ports {
		cmd := c.procs[p]
		if cmd == nil || cmd.ProcessState != nil {
			continue
		}
		cmd.Process.Signal(syscall.SIGCONT) // a node a failed test left paused
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c.admin[p].ShutdownNoSave(ctx)
		cancel()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	for _, a := range c.admin {
		a.Close()
	}
	if c.t.Failed() {
		for _, p := range c.ports {
			if b, err := os.ReadFile(filepath.Join(c.dir, strconv.Itoa(p), "redis.log")); err == nil {
				c.t.Logf("redis-server %d's log (last lines):\n%s", p, tail(string(b), 30))
			}
		}
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// goodsTag is the hash tag of a goods' (first bucket's) keys, {goods:ID}
// (db/goods/internal/sale/keys.go): every key of the goods lives in its slot.
func goodsTag(id int64) string { return "{goods:" + strconv.FormatInt(id, 10) + "}" }

// A grab load for failover tests: loops that each send grabs to one web
// process, as shoppers' clients would, recording every answer.

// grabAnswer is one answer the load got.
type grabAnswer struct {
	at     time.Time
	web    int    // index of the web process
	status int    // HTTP status; 0 when no answer came (transport error)
	code   string // the error body's code ("" on a 201)
	body   string // the body of a 500 or a transport error's text
	order  int64  // the order's ID, on a 201
	user   int64  // the order's shopper, on a 201
}

// served tells whether the grab was decided by the sale: an order (201) or
// a business refusal (409: sold out, limit reached).
func (a grabAnswer) served() bool {
	return a.status == http.StatusCreated || a.status == http.StatusConflict
}

// grabLoad runs loops of grabs until stopped.
type grabLoad struct {
	mu      sync.Mutex
	answers []grabAnswer
	stopc   chan struct{}
	wg      sync.WaitGroup
}

// startGrabLoad starts loops goroutines; loop i sends grabs of goodsID to
// webs[i%len(webs)], each grab as the next of the shoppers (tokens) in
// turn, so the per-shopper limit is reached late, each with an
// Idempotency-Key kept while the answer is a 503 or no answer (a safe retry,
// as a client honouring Retry-After makes; here after pause) and renewed after
// any other answer.
func startGrabLoad(webs []*testApp, tokens []string, goodsID int64, loops int, pause time.Duration) *grabLoad {
	l := &grabLoad{stopc: make(chan struct{})}
	client := testCrowdClient(loops, 30*time.Second)
	path := fmt.Sprintf("/api/goods/%d/grab", goodsID)
	for i := 0; i < loops; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			w, tok := i%len(webs), ""
			key, n := "", 0
			for {
				select {
				case <-l.stopc:
					return
				default:
				}
				if key == "" {
					tok = tokens[(i+n*loops)%len(tokens)]
					n++
					key = fmt.Sprintf("failover-%d-%d-%d", goodsID, i, n)
				}
				a := grabOnce(client, webs[w].URL+path, tok, key)
				a.web = w
				l.mu.Lock()
				l.answers = append(l.answers, a)
				l.mu.Unlock()
				if a.status != 0 && a.status != http.StatusServiceUnavailable {
					key = ""
				}
				time.Sleep(pause)
			}
		}()
	}
	return l
}

// grabOnce sends one grab and reads its answer.
func grabOnce(client *http.Client, url, token, key string) grabAnswer {
	req, err := http.NewRequest("POST", url, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	res, err := client.Do(req)
	at := time.Now()
	if err != nil {
		return grabAnswer{at: at, body: err.Error()}
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := grabAnswer{at: at, status: res.StatusCode}
	if res.StatusCode == http.StatusCreated {
		a.order, a.user = orderOf(string(raw))
	}
	if res.StatusCode != http.StatusCreated {
		var e apiError
		json.Unmarshal(raw, &e)
		a.code = e.Error.Code
		if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
			a.code += " (no Retry-After)"
		}
	}
	if res.StatusCode >= 500 && res.StatusCode != http.StatusServiceUnavailable {
		a.body = string(raw)
	}
	return a
}

// snapshot copies the answers so far.
func (l *grabLoad) snapshot() []grabAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]grabAnswer(nil), l.answers...)
}

// waitUntil polls the answers until cond holds, for at most within (a
// bound for a stuck run, not a timing claim); it reports whether cond held.
func (l *grabLoad) waitUntil(within time.Duration, cond func([]grabAnswer) bool) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond(l.snapshot()) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond(l.snapshot())
}

// stop ends the loops and waits for their last answers.
func (l *grabLoad) stop() []grabAnswer {
	close(l.stopc)
	l.wg.Wait()
	return l.snapshot()
}

// servedSince counts each web process's served answers at or after since.
func servedSince(answers []grabAnswer, since time.Time, webs int) []int {
	n := make([]int, webs)
	for _, a := range answers {
		if a.served() && !a.at.Before(since) {
			n[a.web]++
		}
	}
	return n
}

// failoverReport is what a failover run measured, per web process.
type failoverReport struct {
	firstServed []time.Time // first served answer at or after the promotion (zero: none)
	failedAfter []int       // answers after the promotion that were not served, before firstServed
	lastFailure []time.Time // last answer not served
	internal    []grabAnswer
	unexpected  []grabAnswer // neither served nor 503 with Retry-After nor 500
}

// analyse measures, per web process, when grabs were served again after the promotion.
func analyse(answers []grabAnswer, promoted time.Time, webs int) failoverReport {
	r := failoverReport{firstServed: make([]time.Time, webs), failedAfter: make([]int, webs), lastFailure: make([]time.Time, webs)}
	sort.Slice(answers, func(i, j int) bool { return answers[i].at.Before(answers[j].at) })
	for _, a := range answers {
		switch {
		case a.status >= 500 && a.status != http.StatusServiceUnavailable:
			r.internal = append(r.internal, a)
		case a.status == 0 || (a.status != http.StatusServiceUnavailable && !a.served()) || strings.Contains(a.code, "no Retry-After"):
			r.unexpected = append(r.unexpected, a)
		}
		if !a.served() {
			r.lastFailure[a.web] = a.at
		}
		if a.at.Before(promoted) {
			continue
		}
		if a.served() && r.firstServed[a.web].IsZero() {
			r.firstServed[a.web] = a.at
		} else if !a.served() && r.firstServed[a.web].IsZero() {
			r.failedAfter[a.web]++
		}
	}
	return r
}

// logTimeline logs the answers per 100 ms bucket relative to the kill and to
// the promotion, per web process; runs of buckets with the same kinds of
// answer are merged into one line with the counts summed.
func logTimeline(t *testing.T, answers []grabAnswer, killed, promoted time.Time, webs int) {
	t.Helper()
	const bucket = 100 * time.Millisecond
	idx := func(at time.Time) int {
		d := at.Sub(killed)
		if d < 0 {
			return int((d - bucket + 1) / bucket) // rounded down, before the kill too
		}
		return int(d / bucket)
	}
	type cell map[string]int // "status/code" → count
	byBucket := map[int][]cell{}
	lo, hi := 0, 0
	for _, a := range answers {
		b := idx(a.at)
		if b < -20 { // keep 2 s before the kill
			continue
		}
		lo, hi = min(lo, b), max(hi, b)
		if byBucket[b] == nil {
			byBucket[b] = make([]cell, webs)
			for w := range byBucket[b] {
				byBucket[b][w] = cell{}
			}
		}
		k := strconv.Itoa(a.status)
		if a.code != "" {
			k += "/" + a.code
		}
		if a.status == 0 {
			k = "no-answer"
		}
		byBucket[b][a.web][k]++
	}
	kinds := func(cs []cell) string {
		var parts []string
		for w, c := range cs {
			var ks []string
			for k := range c {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			parts = append(parts, fmt.Sprint(w, ks))
		}
		return strings.Join(parts, ";")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "timeline per 100 ms (K: since the fault, P: since the promotion at K+%.2fs):\n", promoted.Sub(killed).Seconds())
	for i := lo; i <= hi; {
		cs := byBucket[i]
		if cs == nil {
			i++
			continue
		}
		sum := make([]cell, webs)
		for w := range sum {
			sum[w] = cell{}
		}
		j := i
		for ; j <= hi && byBucket[j] != nil && kinds(byBucket[j]) == kinds(cs); j++ {
			for w, c := range byBucket[j] {
				for k, n := range c {
					sum[w][k] += n
				}
			}
		}
		from := killed.Add(time.Duration(i) * bucket)
		to := killed.Add(time.Duration(j) * bucket)
		fmt.Fprintf(&b, "  K%+6.1f..%+6.1fs  P%+6.1f..%+6.1fs ", from.Sub(killed).Seconds(), to.Sub(killed).Seconds(),
			from.Sub(promoted).Seconds(), to.Sub(promoted).Seconds())
		for w, c := range sum {
			var ks []string
			for k, n := range c {
				ks = append(ks, fmt.Sprintf("%s×%d", k, n))
			}
			sort.Strings(ks)
			fmt.Fprintf(&b, " | web-%d: %s", w+1, strings.Join(ks, " "))
		}
		b.WriteString("\n")
		i = j
	}
	t.Log(b.String())
}

// logReport logs when each web process served grabs again, and every 500.
func logReport(t *testing.T, r failoverReport, killed, promoted time.Time) {
	t.Helper()
	t.Logf("promotion %.2f s after the fault", promoted.Sub(killed).Seconds())
	for w := range r.firstServed {
		if r.firstServed[w].IsZero() {
			t.Logf("web-%d: no grab served after the promotion (%d failed answers)", w+1, r.failedAfter[w])
			continue
		}
		last := "no failed answer"
		if !r.lastFailure[w].IsZero() {
			last = fmt.Sprintf("last failed answer at K%+.2fs", r.lastFailure[w].Sub(killed).Seconds())
		}
		t.Logf("web-%d: grabs served again %.2f s after the promotion (%.2f s after the fault), after %d failed answers since the promotion; %s",
			w+1, r.firstServed[w].Sub(promoted).Seconds(), r.firstServed[w].Sub(killed).Seconds(), r.failedAfter[w], last)
	}
	for _, a := range r.internal {
		t.Logf("500 on web-%d at K%+.2fs: %s", a.web+1, a.at.Sub(killed).Seconds(), a.body)
	}
	for _, a := range r.unexpected {
		t.Logf("unexpected answer on web-%d at K%+.2fs: %d %s %s", a.web+1, a.at.Sub(killed).Seconds(), a.status, a.code, a.body)
	}
}
