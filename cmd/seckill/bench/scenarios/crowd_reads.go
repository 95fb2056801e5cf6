package scenarios

// The crowd's measures once it is through: each kind of read in a closed
// loop at -c connections, anonymous and signed in, against a no-op (GET
// /healthz) in the same rounds, with the Redis commands, SQL statements and
// machine CPU each costs (as the sold-out refusal is set against the no-op,
// refusals.go); and how long a stock change takes to reach the live
// sockets of the second process.

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// The targets of the reads at sale time (docs/PERFORMANCE.md, "Reads at sale time").
const (
	crowdReadRate   = 0.8  // a read's rate ÷ the no-op's, at least
	crowd304Rate    = 0.9  // a 304's rate ÷ the no-op's, at least
	crowdReadP99MS  = 15.0 // a read's p99, at most, at crowdReadConc connections
	crowdReadConc   = 200
	crowdRedisRead  = 0.02  // Redis commands a read, at most
	crowdLagP99MS   = 250.0 // a stock change reaches 99% of the live sockets within
	crowdReaders    = 2000  // distinct readers (address, cookie) the loads take turns with
	CrowdNoop       = "crowd: no-op (GET /healthz)"
	sqlStatementsTS = "seckill_sql_statements_total" // the app's count of SQL statements, if it keeps one
)

// crowdRead is one kind of read by one kind of reader.
type crowdRead struct {
	kind, who, path string
	want304         bool
	own             bool     // the reader's own part a signed-in page's script fetches: reported, not held to the shared reads' targets
	heads           [][]byte // reader j's header lines
	sample          string   // one answer, described
	skip            string   // why it is not measured ("": it is)
}

func (rd *crowdRead) name() string { return "crowd read: " + rd.kind + ", " + rd.who }

// measureReads loads each kind of read and reports it against the no-op.
func (c *crowd) measureReads(ctx context.Context, o *Options, r *bench.Report) error {
	setup := len(c.client.conns) - 1
	n := min(len(c.tokens), crowdReaders)
	heads := map[string][][]byte{WhoAnon: make([][]byte, n), WhoSigned: make([][]byte, n)}
	for j := range n {
		heads[WhoAnon][j] = headBlock(c.addrs[j], "")
		heads[WhoSigned][j] = headBlock(c.addrs[j], c.tokens[j])
	}
	a, err := c.client.do(setup, "GET", fmt.Sprintf("/goods/%d", c.goods), heads[WhoAnon][0], true)
	if err != nil {
		return err
	}
	page, _ := decodeBody(a.encoding, a.body)
	file, fileKind := "", "static file (none named by the goods page)"
	if files := pageFiles(c.host, "/goods/", page); len(files) > 0 {
		file, fileKind = files[0], "static file "+files[0]
	}
	goodsJSON := fmt.Sprintf("/api/goods/%d", c.goods)
	kinds := []struct {
		kind, path   string
		want304, own bool
	}{
		{"front page /", "/", false, false},
		{"goods page /goods/{id}", fmt.Sprintf("/goods/%d", c.goods), false, false},
		{"goods JSON /api/goods/{id}", goodsJSON, false, false},
		{"slot's goods /api/slots/{id}/goods", fmt.Sprintf("/api/slots/%d/goods", c.slot), false, false},
		{"slots /api/slots", "/api/slots", false, false},
		{fileKind, file, false, false},
		{"304 to If-None-Match, goods JSON", goodsJSON, true, false},
		{"own orders /api/me/orders (a signed-in page's script reads them)", "/api/me/orders", false, true},
	}
	var reads []*crowdRead
	for _, k := range kinds {
		for _, who := range []string{WhoAnon, WhoSigned} {
			if k.own && who == WhoAnon {
				continue
			}
			rd := &crowdRead{kind: k.kind, who: who, path: k.path, want304: k.want304, own: k.own, heads: heads[who]}
			if rd.path == "" {
				rd.skip = "the goods page names no stylesheet or script"
			} else if err := c.sampleRead(setup, rd); err != nil {
				return err
			}
			reads = append(reads, rd)
		}
	}
	sqlCount, sqlNote := c.sqlCounter()
	noop := &crowdRead{kind: "no-op", path: "/healthz", heads: heads[WhoAnon]}
	scs := []*scenario{{name: CrowdNoop, op: c.readOp(noop)}}
	for _, rd := range reads {
		if rd.skip == "" {
			scs = append(scs, &scenario{name: rd.name(), op: c.readOp(rd)})
		}
	}
	sql := map[string]float64{}
	var sqlMu sync.Mutex
	loads, ops := make([]bench.Load, len(scs)), make([]bench.Op, len(scs))
	for i, sc := range scs {
		c.t.measureRedis(ctx, sc, nil)
		if sqlCount != nil {
			inner, name := sc.turn, sc.name
			sc.turn = func(run func()) {
				before := sqlCount()
				if inner != nil {
					inner(run)
				} else {
					run()
				}
				sqlMu.Lock()
				sql[name] += sqlCount() - before
				sqlMu.Unlock()
			}
		}
		loads[i] = bench.Load{Name: sc.name, Concurrency: o.Conc, Requests: int64(o.Requests), Duration: c.cfg.ReadFor, Progress: o.Progress, Turn: sc.turn}
		ops[i] = sc.op
	}
	bench.Run(ctx, bench.Load{Name: "crowd warm-up", Concurrency: o.Conc, Requests: int64(4 * o.Conc)}, c.readOp(noop))
	results := bench.RunRounds(ctx, o.Rounds, loads, ops)
	r.Results = append(r.Results, results...)
	c.reportReads(o, r, reads, sql, sqlCount != nil, sqlNote)
	for _, sc := range scs { // reported here, not among the grabs' CPU lines
		delete(c.t.redisWork, sc.name)
	}
	return nil
}

// sampleRead reads rd once and describes the answer; for the 304 it first
// reads the ETag each reader is given (one for every anonymous reader).
func (c *crowd) sampleRead(w int, rd *crowdRead) error {
	if rd.want304 {
		heads := make([][]byte, len(rd.heads))
		etag := ""
		for j := range heads {
			if j == 0 || rd.who == WhoSigned {
				a, err := c.client.do(w, "GET", rd.path, rd.heads[j], true)
				if err != nil {
					return err
				}
				if etag = a.etag; etag == "" {
					rd.skip = fmt.Sprintf("the server gave no ETag for GET %s (%s)", rd.path, describeAnswer(a))
					return nil
				}
			}
			tok := ""
			if rd.who == WhoSigned {
				tok = c.tokens[j]
			}
			heads[j] = headBlock(c.addrs[j], tok, "If-None-Match: "+etag)
		}
		rd.heads = heads
	}
	a, err := c.client.do(w, "GET", rd.path, rd.heads[0], true)
	if err != nil {
		return err
	}
	rd.sample = describeAnswer(a)
	return nil
}

// describeAnswer is an answer's status, size and the headers a reader cares about.
func describeAnswer(a crowdAnswer) string {
	parts := []string{strconv.Itoa(a.status), fmt.Sprintf("%.1f KiB", float64(len(a.body))/1024)}
	if a.encoding != "" {
		parts[1] += " " + a.encoding
	}
	if a.etag != "" {
		parts = append(parts, "ETag")
	} else {
		parts = append(parts, "no ETag")
	}
	if a.cacheControl != "" {
		parts = append(parts, a.cacheControl)
	}
	if a.setCookie {
		parts = append(parts, "sets a cookie")
	}
	return strings.Join(parts, " · ")
}

// readOp is one read of rd on worker w by reader i: "ok" when the answer is
// what a reader wants (2xx, or 304 for the revalidation).
func (c *crowd) readOp(rd *crowdRead) bench.Op {
	return func(_ context.Context, w int, i int64) string {
		a, err := c.client.do(w, "GET", rd.path, rd.heads[i%int64(len(rd.heads))], false)
		switch {
		case err != nil:
			return "transport"
		case rd.want304 && a.status == 304, !rd.want304 && a.status/100 == 2:
			return "ok"
		}
		return "http_" + strconv.Itoa(a.status)
	}
}

// sqlCounter reads the app's count of SQL statements from /metrics, when it keeps one.
func (c *crowd) sqlCounter() (func() float64, string) {
	scrape := func() (float64, bool) {
		req, _ := http.NewRequest("GET", c.t.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+c.t.admin)
		res, err := c.t.client.Do(req)
		if err != nil {
			return 0, false
		}
		defer res.Body.Close()
		total, found := 0.0, false
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, sqlStatementsTS); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
				f := strings.Fields(line)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err == nil {
					total, found = total+v, true
				}
			}
		}
		return total, found
	}
	if _, ok := scrape(); !ok {
		return nil, "not measured: the app keeps no count of its SQL statements (no " + sqlStatementsTS + " in /metrics), and the bench counts none of its own"
	}
	return func() float64 { v, _ := scrape(); return v }, ""
}

// reportReads adds the reads' table and targets.
func (c *crowd) reportReads(o *Options, r *bench.Report, reads []*crowdRead, sql map[string]float64, sqlMeasured bool, sqlNote string) {
	noop := r.Result(CrowdNoop)
	if noop == nil || noop.Requests == 0 {
		return
	}
	nw := c.t.redisWork[CrowdNoop]
	// What the no-op's turns saw is background work (samplers, expiry ticks,
	// the flush, the task queue): its rate a second is taken off each read.
	var bgCmds, bgSQL, noopCPU float64
	redisNote, redisShort := "not measured: a server the bench does not run (-url)", "not measured (-url)"
	bgSQL = sql[CrowdNoop] / noop.Seconds
	if nw != nil {
		cmds, _ := redisCalls(nw)
		bgCmds = cmds / noop.Seconds
		noopCPU = machineCPU(nw, noop)
		if nw.err != nil {
			redisNote, redisShort = notMeasured(nw.err), "not measured (see below)"
			if t := c.t; t.embedded {
				redisShort = "not measured (embedded Redis)"
			}
		}
	}
	tb := bench.Table{
		Title: fmt.Sprintf("The crowd's reads: a closed loop at c=%d after the crowd, %d rounds, against the no-op in the same rounds; readers take turns among %d addresses (and cookies)",
			o.Conc, o.Rounds, min(len(c.tokens), crowdReaders)),
		Header: []string{"read", "reader", "reads/s", "÷ no-op", "p99 ms", "Redis commands a read (net; gross)", "SQL a read", "machine CPU µs a read (÷ no-op)", "answer (one sampled)"},
		Rows:   [][]string{{"no-op GET /healthz", "", fmt.Sprintf("%.0f", noop.Throughput), "1", fmt.Sprintf("%.2f", noop.Latency.P99), "", "", cpuCell(noopCPU, noopCPU), ""}},
	}
	worstRedis, worstSQL, worstName := -1.0, -1.0, ""
	for _, rd := range reads {
		res := r.Result(rd.name())
		if rd.skip != "" || res == nil || res.Requests == 0 {
			why := rd.skip
			if why == "" {
				why = "no request ran"
			}
			tb.Rows = append(tb.Rows, []string{rd.kind, rd.who, "not measured: " + why, "", "", "", "", "", rd.sample})
			continue
		}
		ratio, goal := res.Throughput/noop.Throughput, crowdReadRate
		if rd.want304 {
			goal = crowd304Rate
		}
		redisCell, sqlCell, cpu := redisShort, "not measured (see below)", 0.0
		if w := c.t.redisWork[rd.name()]; w != nil {
			cpu = machineCPU(w, res)
			if w.err == nil {
				cmds, _ := redisCalls(w)
				net := max(0, cmds-bgCmds*res.Seconds) / float64(res.Requests)
				redisCell = fmt.Sprintf("%.4f; %.4f", net, cmds/float64(res.Requests))
				if net > worstRedis && !rd.own {
					worstRedis, worstName = net, rd.kind+", "+rd.who
				}
			}
		}
		if sqlMeasured {
			s := max(0, sql[rd.name()]-bgSQL*res.Seconds) / float64(res.Requests)
			sqlCell = fmt.Sprintf("%.4f; %.4f", s, sql[rd.name()]/float64(res.Requests))
			if !rd.own {
				worstSQL = max(worstSQL, s)
			}
		}
		tb.Rows = append(tb.Rows, []string{rd.kind, rd.who, fmt.Sprintf("%.0f", res.Throughput), fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.2f", res.Latency.P99),
			redisCell, sqlCell, cpuCell(cpu, noopCPU), rd.sample})
		if rd.own {
			continue // the reader's own: once a page view, not a shared read
		}
		r.Targets = append(r.Targets, bench.Target{
			Name:     fmt.Sprintf("crowd read, %s, %s: reads/s ÷ no-op and p99", rd.kind, rd.who),
			Measured: fmt.Sprintf("%.0f ÷ %.0f = %.2f×, p99 %.2f ms at c=%d", res.Throughput, noop.Throughput, ratio, res.Latency.P99, res.Concurrency),
			Goal:     fmt.Sprintf("≥ %.1f×, p99 ≤ %.0f ms at c=%d", goal, crowdReadP99MS, crowdReadConc),
			Met:      ratio >= goal && res.Latency.P99 <= crowdReadP99MS && res.Concurrency >= crowdReadConc,
		})
	}
	tb.Notes = append(tb.Notes,
		"Redis commands from INFO commandstats around each turn; net takes off the no-op turns' rate of commands a second (background work). SQL likewise from the app's own count. Machine CPU: this process (server, load generator, and the embedded Redis when it is one) plus a real Redis's own (INFO cpu).",
		"Readers send what a browser sends: Accept-Encoding gzip, deflate, br, zstd; the signed-in ones their session cookie, the anonymous ones none.")
	r.Tables = append(r.Tables, tb)
	if worstRedis >= 0 {
		r.Targets = append(r.Targets, bench.Target{
			Name:     "crowd reads: Redis commands a read (INFO commandstats, net of the no-op's background rate), the most of any read",
			Measured: fmt.Sprintf("%.4f (%s)", worstRedis, worstName), Goal: fmt.Sprintf("≤ %.2f", crowdRedisRead), Met: worstRedis <= crowdRedisRead,
		})
	} else {
		r.Extra["crowd: Redis commands a read"] = redisNote
	}
	if worstSQL >= 0 {
		r.Targets = append(r.Targets, bench.Target{
			Name:     "crowd reads: SQL statements a read (the app's count, net of the no-op's background rate), the most of any read",
			Measured: fmt.Sprintf("%.4f", worstSQL), Goal: "none", Met: worstSQL < 0.0005,
		})
	} else {
		r.Extra["crowd: SQL statements a read"] = sqlNote
	}
}

// redisCalls is every command the Redis ran in w's turns.
func redisCalls(w *redisWork) (float64, error) {
	var n float64
	for _, v := range w.stats.cmds {
		n += v[0]
	}
	return n, w.err
}

// machineCPU is the CPU a request of res cost: this process's, plus a real Redis's own.
func machineCPU(w *redisWork, res *bench.Result) float64 {
	if res.Requests == 0 {
		return 0
	}
	cpu := w.procUS
	if w.err == nil {
		cpu += w.stats.cpuUS
	}
	return cpu / float64(res.Requests)
}

func cpuCell(us, noop float64) string {
	switch {
	case us == 0:
		return "not measured"
	case noop == 0:
		return fmt.Sprintf("%.1f", us)
	}
	return fmt.Sprintf("%.1f (%.2f×)", us, us/noop)
}

// measureLag makes stock changes on the probe goods, one grab a second by a
// shopper of its own, and times each one's arrival at every live socket from
// the moment its grab was sent.
func (c *crowd) measureLag(ctx context.Context, sockets *liveCrowd, probe int64, r *bench.Report) error {
	users, err := c.t.Accounts.SeedUsers(ctx, fmt.Sprintf("crowdprobe%d_", time.Now().UnixNano()%1000000), "bench-password", c.cfg.Probes)
	if err != nil {
		return err
	}
	w := len(c.client.conns) - 1
	c.client.do(w, "GET", "/healthz", nil, false)
	type change struct {
		at, left int64 // sent (unix ns); the stock it left
		took     time.Duration
	}
	var changes []change
	var codes []string
	left := int64(c.cfg.Probes)
	for k, u := range users {
		head := []byte("X-Forwarded-For: " + shopperAddr(crowdSocketBase+c.cfg.Live+k) + "\r\nAuthorization: Bearer " + c.t.Tokens.Sign(u) + "\r\n")
		at := time.Now()
		a, err := c.client.do(w, "POST", fmt.Sprintf("/api/goods/%d/grab", probe), head, false)
		code := "transport"
		if err == nil {
			code = outcome(a.status, a.body, nil)
		}
		codes = append(codes, code)
		if code == "ok" {
			left--
			changes = append(changes, change{at: at.UnixNano(), left: left, took: time.Since(at)})
		}
		if !sleepUntil(ctx, at.Add(time.Second)) {
			break
		}
	}
	arrivals, dropped, events, err := sockets.dump()
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		r.Extra["crowd: stock event lag to the live sockets"] = fmt.Sprintf("not measured: no probe grab won (%s)", strings.Join(codes, ", "))
		return nil
	}
	var all []float64
	var perChange, grabs []string
	for _, ch := range changes {
		lags := make([]float64, len(arrivals))
		for i, evs := range arrivals {
			lags[i] = math.Inf(1)
			for _, e := range evs {
				if e.remaining <= ch.left && e.at >= ch.at {
					lags[i] = float64(e.at-ch.at) / 1e6
					break
				}
			}
		}
		sort.Float64s(lags)
		all = append(all, lags...)
		perChange = append(perChange, lagText(quantile(lags, 0.99)))
		grabs = append(grabs, fmt.Sprintf("%.1f", float64(ch.took.Microseconds())/1000))
	}
	sort.Float64s(all)
	p50, p99 := quantile(all, 0.5), quantile(all, 0.99)
	r.Extra["crowd: stock event lag to the live sockets"] = fmt.Sprintf(
		"a stock change (one grab) reached 50%% of the %d live sockets in %s, 99%% in %s, timed from the grab's send (%d changes a second apart; each change's 99%%: %s; the grabs answered in %s ms); %d sockets closed by the server, %d events received in all",
		len(arrivals), lagText(p50), lagText(p99), len(changes), strings.Join(perChange, ", "), strings.Join(grabs, ", "), dropped, events)
	r.Targets = append(r.Targets, bench.Target{
		Name:     fmt.Sprintf("crowd: a stock change reaches 99%% of the live sockets (%d, held by a second process)", len(arrivals)),
		Measured: fmt.Sprintf("%s (50%%: %s; %d changes)", lagText(p99), lagText(p50), len(changes)),
		Goal:     fmt.Sprintf("≤ %.0f ms", crowdLagP99MS), Met: p99 <= crowdLagP99MS,
	})
	return nil
}

// quantile is the q-quantile of sorted values (the nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.Inf(1)
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func lagText(ms float64) string {
	if math.IsInf(ms, 1) {
		return "never (not every socket got it)"
	}
	return fmt.Sprintf("%.1f ms", ms)
}
