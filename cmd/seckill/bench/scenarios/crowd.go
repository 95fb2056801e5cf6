package scenarios

// The crowd: the reads of a sale (docs/ARCHITECTURE.md, "Reads at sale time").
// Before and at the start of a sale the crowd reads far more than it grabs.
// The scenario makes a slot that starts a little later with one goods in it,
// then lets -crowd shoppers arrive over -crowd-arrive, each as a browser
// would: the front page, the goods page and the files it names (its
// stylesheets and scripts, whatever names the templates give them), the
// WebSocket with the page's topics subscribed and the catch-up read that
// static/goods.js makes once subscribed, then the goods JSON every second
// until the sale starts, and one grab at the start. Odd shoppers read
// anonymously (no cookie; their grab carries their token), even ones
// signed in (the session cookie). Meanwhile a second process holds
// -crowd-live sockets on the goods (crowd_sockets.go).
//
// Once the crowd is through, each kind of read is measured in a closed
// loop at -c connections against a no-op (GET /healthz) in the same rounds
// (crowd_reads.go), and stock changes are timed to every live socket.

import (
	"context"
	"flag"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gorilla/websocket"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/handlers"
)

// CrowdConfig are the crowd's knobs (-crowd-…).
type CrowdConfig struct {
	Shoppers int           // shoppers in the crowd
	Live     int           // live sockets held by the second process
	Arrive   time.Duration // the shoppers arrive evenly over this
	Lead     time.Duration // from the last arrival to the sale's start
	Probes   int           // stock changes timed to every live socket
	ReadFor  time.Duration // the most a kind of read is loaded, over all its rounds
}

func defaultCrowdConfig() CrowdConfig {
	return CrowdConfig{Shoppers: 20000, Live: 10000, Arrive: 20 * time.Second, Lead: 5 * time.Second, Probes: 5, ReadFor: 15 * time.Second}
}

// smokeCrowdConfig is the crowd of -smoke, whose reads are ended by their
// -n requests, never by ReadFor: a test counts every request, and a busy
// machine may take long over them.
func smokeCrowdConfig() CrowdConfig {
	return CrowdConfig{Shoppers: 50, Live: 20, Arrive: time.Second, Lead: 2 * time.Second, Probes: 3, ReadFor: 10 * time.Minute}
}

func (c *CrowdConfig) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Shoppers, "crowd", c.Shoppers, "crowd: shoppers who load the pages, subscribe, poll and grab once")
	fs.IntVar(&c.Live, "crowd-live", c.Live, "crowd: live WebSocket clients held by a second process (stock event lag)")
	fs.DurationVar(&c.Arrive, "crowd-arrive", c.Arrive, "crowd: the shoppers arrive evenly over this")
	fs.DurationVar(&c.Lead, "crowd-lead", c.Lead, "crowd: from the last arrival to the sale's start")
	fs.IntVar(&c.Probes, "crowd-probes", c.Probes, "crowd: stock changes timed to every live socket")
	fs.DurationVar(&c.ReadFor, "crowd-read-for", c.ReadFor, "crowd: the most time each kind of read is loaded (its -n requests may end it sooner)")
}

// maxLiveSockets keeps the in-process server, which holds the other end of
// every live socket, under a process's 20,000 open files.
const maxLiveSockets = 15000

func (c CrowdConfig) check() error {
	if c.Shoppers < 1 || c.Live < 0 || c.Probes < 0 || c.Arrive < 0 || c.Lead < 0 || c.ReadFor <= 0 {
		return fmt.Errorf("bench: -crowd must be positive, -crowd-live, -crowd-probes, -crowd-arrive and -crowd-lead not negative, -crowd-read-for positive")
	}
	if c.Live > maxLiveSockets {
		return fmt.Errorf("bench: -crowd-live %d: at most %d (the server's end of each socket is a file of its process)", c.Live, maxLiveSockets)
	}
	return nil
}

// crowd is one run of the crowd against t.
type crowd struct {
	t       *benchTarget
	cfg     CrowdConfig
	client  *crowdClient
	pool    chan int // the client's workers, lent one request at a time
	tokens  []string // shopper k's token
	addrs   []string // shopper k's client address
	host    string
	goods   int64
	slot    int64
	stats   crowdStats
	sockets chan struct{} // a slot for each of the shoppers' sockets open at once
	polls   atomic.Int64
	late    atomic.Int64 // polls sent later than their second
	visits  atomic.Int64 // shoppers who loaded everything before the start
	missing atomic.Int64 // shoppers whose page named no live topic or file
}

// benchCrowd runs the crowd and adds its tables, measures and targets to r.
func benchCrowd(ctx context.Context, o *Options, t *benchTarget, r *bench.Report) error {
	cfg := o.Crowd
	c, err := newCrowd(ctx, o, t)
	if err != nil {
		return err
	}
	defer c.client.Close()
	var sockets *liveCrowd
	if cfg.Live > 0 {
		if sockets, err = startLiveCrowd(t.URL, cfg.Live); err != nil {
			return err
		}
		defer sockets.close()
	}
	start := time.Now().Add(2*time.Second + cfg.Arrive + cfg.Lead).Truncate(time.Second).Add(time.Second).UTC()
	if c.slot, err = t.benchSlot("bench crowd", start, start.Add(time.Hour)); err != nil {
		return err
	}
	if c.goods, err = c.createGoods("crowd goods", o.Stock); err != nil {
		return err
	}
	probe := int64(0)
	if cfg.Probes > 0 && sockets != nil {
		if probe, err = c.createGoods("crowd lag probe", cfg.Probes); err != nil {
			return err
		}
	}
	liveNote := "no live sockets (-crowd-live 0)"
	if sockets != nil {
		topics := []string{live.TopicGoods(c.goods)}
		if probe > 0 {
			topics = append(topics, live.TopicGoods(probe))
		}
		acked, want, err := sockets.subscribe(probe, topics)
		if err != nil {
			return err
		}
		liveNote = fmt.Sprintf("%d of %d live sockets open in a second process (%d failed to open), %d of %d subscriptions (%s) acknowledged",
			sockets.open, cfg.Live, sockets.failed, acked, want, strings.Join(topics, ", "))
	}
	began := time.Now()
	okGrabs := c.run(ctx, start)
	crowdSecs := time.Since(began).Seconds()
	if err := t.checkGoods(ctx, r, "crowd", c.goods, int64(o.Stock), 1, okGrabs); err != nil {
		return err
	}
	r.Tables = append(r.Tables, c.table(o, start, crowdSecs, liveNote))
	if sockets != nil && probe > 0 {
		if err := c.measureLag(ctx, sockets, probe, r); err != nil {
			return err
		}
	}
	return c.measureReads(ctx, o, r)
}

// newCrowd makes the crowd's shoppers: the bench's own, and as many more as
// the crowd needs, each with a token and an address.
func newCrowd(ctx context.Context, o *Options, t *benchTarget) (*crowd, error) {
	c := &crowd{t: t, cfg: o.Crowd, tokens: append([]string(nil), t.tokens...), addrs: append([]string(nil), t.addrs...)}
	if more := o.Crowd.Shoppers - len(c.tokens); more > 0 {
		users, err := t.Accounts.SeedUsers(ctx, fmt.Sprintf("crowd%d_", time.Now().Unix()%100000), "bench-password", more)
		if err != nil {
			return nil, fmt.Errorf("seed the crowd: %w", err)
		}
		for _, u := range users {
			c.tokens = append(c.tokens, t.Tokens.Sign(u))
			c.addrs = append(c.addrs, shopperAddr(len(c.addrs)))
		}
	}
	c.tokens, c.addrs = c.tokens[:o.Crowd.Shoppers], c.addrs[:o.Crowd.Shoppers]
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, err
	}
	c.host = u.Host
	if c.client, err = newCrowdClient(t.URL, o.Conc+1); err != nil {
		return nil, err
	}
	c.sockets = make(chan struct{}, crowdSocketsAtOnce)
	c.pool = make(chan int, o.Conc)
	for w := range o.Conc {
		c.pool <- w
	}
	return c, nil
}

// createGoods puts goods of stock (limit 1 a shopper) in the crowd's slot.
func (c *crowd) createGoods(title string, stock int) (int64, error) {
	var g struct {
		Goods struct {
			ID int64 `json:"id"`
		} `json:"goods"`
	}
	err := c.t.mustCall("POST", "/api/admin/goods", c.t.admin, map[string]any{
		"slot_id": c.slot, "title": title, "description": "load bench: the crowd", "price_cents": 9900,
		"seckill_price_cents": 990, "stock": stock, "limit_per_user": 1,
	}, &g)
	return g.Goods.ID, err
}

// run lets every shopper arrive, read and grab; it returns the grabs that
// won. Every shopper is done by a minute after the start.
func (c *crowd) run(ctx context.Context, start time.Time) int64 {
	ctx, cancel := context.WithDeadline(ctx, start.Add(time.Minute))
	defer cancel()
	first := start.Add(-c.cfg.Lead - c.cfg.Arrive)
	n := len(c.tokens)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.shopper(ctx, k, first.Add(time.Duration(int64(c.cfg.Arrive)*int64(k)/int64(n))), start)
		}()
	}
	wg.Wait()
	return c.stats.codes("grab", "ok")
}

// Who reads: the labels of the report.
const (
	WhoAnon   = "anonymous"
	WhoSigned = "signed in"
)

// shopper k's visit: the pages and their files, the socket, the polls, the grab.
func (c *crowd) shopper(ctx context.Context, k int, arrive, start time.Time) {
	if !sleepUntil(ctx, arrive) {
		return
	}
	who, cookie := WhoSigned, c.tokens[k]
	if k%2 == 1 {
		who, cookie = WhoAnon, ""
	}
	head := headBlock(c.addrs[k], cookie)
	front, _ := c.page(ctx, "front page", who, "/", head)
	goodsPage, _ := c.page(ctx, "goods page", who, fmt.Sprintf("/goods/%d", c.goods), head)
	files := append(pageFiles(c.host, "/", front), pageFiles(c.host, "/goods/", goodsPage)...)
	seen := map[string]bool{}
	for _, f := range files {
		if !seen[f] {
			seen[f] = true
			c.request(ctx, "static file", who, "GET", f, head)
		}
	}
	topics := liveTopics(goodsPage)
	if len(topics) == 0 || len(files) == 0 {
		c.missing.Add(1)
	}
	if len(topics) > 0 {
		c.socket(ctx, k, who, cookie, topics, head)
	}
	if time.Now().Before(start) {
		c.visits.Add(1)
	}
	poll := fmt.Sprintf("/api/goods/%d", c.goods)
	etag := ""
	next := time.Now()
	for range int((start.Sub(arrive))/time.Second) + 2 {
		if !next.Before(start) || !sleepUntil(ctx, next) {
			break
		}
		h := head
		if etag != "" { // a browser revalidates what it holds
			h = append(head[:len(head):len(head)], "If-None-Match: "+etag+"\r\n"...)
		}
		a, _ := c.request(ctx, "goods JSON poll", who, "GET", poll, h)
		if a.etag != "" {
			etag = a.etag
		}
		c.polls.Add(1)
		if next = next.Add(time.Second); time.Now().After(next) {
			c.late.Add(1)
			next = time.Now()
		}
	}
	if sleepUntil(ctx, start) {
		c.request(ctx, "grab", who, "POST", poll+"/grab", []byte("X-Forwarded-For: "+c.addrs[k]+"\r\nAuthorization: Bearer "+c.tokens[k]+"\r\n"))
	}
}

// page reads a page and returns its body, decoded.
func (c *crowd) page(ctx context.Context, kind, who, path string, head []byte) ([]byte, bool) {
	var body []byte
	_, ok := c.requestWith(ctx, kind, who, "GET", path, head, func(a crowdAnswer) {
		if a.status/100 == 2 {
			b, err := decodeBody(a.encoding, a.body)
			if err == nil {
				body = append([]byte(nil), b...)
			}
		}
	})
	return body, ok
}

// request sends one request of the crowd on a worker lent by the pool and
// records it under kind and who; its latency counts from when the shopper
// meant to send it, waiting for a worker included.
func (c *crowd) request(ctx context.Context, kind, who, method, path string, head []byte) (crowdAnswer, bool) {
	return c.requestWith(ctx, kind, who, method, path, head, nil)
}

// requestWith is request with use, which reads the answer before the worker goes back.
func (c *crowd) requestWith(ctx context.Context, kind, who, method, path string, head []byte, use func(crowdAnswer)) (crowdAnswer, bool) {
	began := time.Now()
	var w int
	select {
	case w = <-c.pool:
	case <-ctx.Done():
		return crowdAnswer{}, false
	}
	a, err := c.client.do(w, method, path, head, true)
	code := "transport"
	if err == nil {
		code = outcome(a.status, a.body, nil)
		if a.status == 304 {
			code = "not_modified"
		}
		if use != nil {
			use(a)
		}
	}
	a.body = nil
	c.pool <- w
	c.stats.record(kind, who, time.Since(began), code)
	return a, err == nil
}

// crowdSocketsAtOnce bounds the shoppers' sockets open at once (each is two
// open files of this process, the client's and the in-process server's).
const crowdSocketsAtOnce = 512

// socket opens the live socket as static/app.js does, subscribes each
// topic, waits for the acknowledgements, closes it and makes the catch-up
// read static/goods.js makes for each topic: the open pages of the sale are
// the second process's sockets, which this process could not also hold.
func (c *crowd) socket(ctx context.Context, k int, who, cookie string, topics []string, head []byte) {
	began := time.Now()
	select {
	case c.sockets <- struct{}{}:
	case <-ctx.Done():
		return
	}
	acked := c.subscribe(ctx, k, cookie, topics)
	<-c.sockets
	code := "ok"
	switch {
	case acked < 0:
		code = "transport"
	case acked < len(topics):
		code = "not_subscribed"
	}
	c.stats.record("WebSocket open + subscribe", who, time.Since(began), code)
	if acked < 0 {
		return
	}
	for _, t := range topics {
		kind, id, _ := strings.Cut(t, ":")
		switch kind {
		case "goods":
			c.request(ctx, "goods JSON catch-up", who, "GET", "/api/goods/"+id, head)
		case "slot":
			c.request(ctx, "slot goods catch-up", who, "GET", "/api/slots/"+id+"/goods", head)
		}
	}
}

// subscribe opens shopper k's socket, subscribes topics and returns how
// many the server acknowledged within 10 s (-1: the socket did not open).
func (c *crowd) subscribe(ctx context.Context, k int, cookie string, topics []string) int {
	h := map[string][]string{"X-Forwarded-For": {c.addrs[k]}, "Origin": {"http://" + c.host}}
	if cookie != "" {
		h["Cookie"] = []string{handlers.SessionCookie + "=" + cookie}
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.DialContext(ctx, WSURL(c.t.URL), h)
	if err != nil {
		return -1
	}
	defer ws.Close()
	for _, t := range topics {
		ws.WriteJSON(map[string]string{"op": "subscribe", "topic": t})
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	acked := 0
	for acked < len(topics) {
		var m struct {
			Type string `json:"type"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			break
		}
		if m.Type == "subscribed" {
			acked++
		}
	}
	return acked
}

var (
	tagPattern   = regexp.MustCompile(`(?is)<(link|script)\b([^>]*)>`)
	attrPattern  = regexp.MustCompile(`(?is)([a-z][a-z0-9-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)
	topicPattern = regexp.MustCompile(`\bdata-live-topic\s*=\s*["']([^"']+)["']`)
)

// pageFiles lists the same-site stylesheets and scripts a page at path
// names, in order, as paths to request.
func pageFiles(host, path string, page []byte) []string {
	base := &url.URL{Scheme: "http", Host: host, Path: path}
	var out []string
	for _, m := range tagPattern.FindAllSubmatch(page, -1) {
		attrs := map[string]string{}
		for _, a := range attrPattern.FindAllSubmatch(m[2], -1) {
			attrs[strings.ToLower(string(a[1]))] = html.UnescapeString(string(a[2]) + string(a[3]) + string(a[4]))
		}
		ref := attrs["src"]
		if strings.EqualFold(string(m[1]), "link") {
			ref = ""
			for _, rel := range strings.Fields(strings.ToLower(attrs["rel"])) {
				if rel == "stylesheet" {
					ref = attrs["href"]
				}
			}
		}
		if ref == "" {
			continue
		}
		u, err := url.Parse(ref)
		if err != nil {
			continue
		}
		if u = base.ResolveReference(u); u.Host == host && (u.Scheme == "http" || u.Scheme == "") {
			out = append(out, u.RequestURI())
		}
	}
	return out
}

// liveTopics are the topics a page's sections name, as static/goods.js subscribes them.
func liveTopics(page []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range topicPattern.FindAllSubmatch(page, -1) {
		if t := html.UnescapeString(string(m[1])); !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// crowdStats are the crowd's requests by kind and reader.
type crowdStats struct {
	mu    sync.Mutex
	kinds map[[2]string]*crowdKind
	order [][2]string
}

type crowdKind struct {
	hist  *hdrhistogram.Histogram
	codes map[string]int64
}

func (s *crowdStats) record(kind, who string, d time.Duration, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds == nil {
		s.kinds = map[[2]string]*crowdKind{}
	}
	key := [2]string{kind, who}
	k := s.kinds[key]
	if k == nil {
		k = &crowdKind{hist: hdrhistogram.New(1, 120*1000*1000, 3), codes: map[string]int64{}}
		s.kinds[key] = k
		s.order = append(s.order, key)
	}
	k.hist.RecordValue(max(d.Microseconds(), 1))
	k.codes[code]++
}

// codes counts the requests of kind (both readers) that ended as code.
func (s *crowdStats) codes(kind, code string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for key, k := range s.kinds {
		if key[0] == kind {
			n += k.codes[code]
		}
	}
	return n
}

// crowdKinds orders the crowd's table as a visit goes.
var crowdKinds = []string{"front page", "goods page", "static file", "WebSocket open + subscribe", "goods JSON catch-up", "slot goods catch-up", "goods JSON poll", "grab"}

// table is the crowd's own table: each kind of request as the crowd made it.
func (c *crowd) table(o *Options, start time.Time, secs float64, liveNote string) bench.Table {
	s := &c.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	rank := map[string]int{}
	for i, k := range crowdKinds {
		rank[k] = i
	}
	keys := append([][2]string(nil), s.order...)
	sort.SliceStable(keys, func(i, j int) bool {
		if rank[keys[i][0]] != rank[keys[j][0]] {
			return rank[keys[i][0]] < rank[keys[j][0]]
		}
		return keys[i][1] < keys[j][1]
	})
	tb := bench.Table{
		Title:  fmt.Sprintf("The crowd: %d shoppers arriving over %s, the sale %s after the last; each request's latency counts from when its shopper meant to send it, the wait for one of the crowd's %d connections included", len(c.tokens), c.cfg.Arrive, c.cfg.Lead, o.Conc),
		Header: []string{"request", "reader", "requests", "p50 ms", "p99 ms", "max ms", "outcomes"},
	}
	for _, key := range keys {
		k := s.kinds[key]
		var codes []string
		res := bench.Result{Codes: k.codes}
		for _, code := range res.SortedCodes() {
			codes = append(codes, fmt.Sprintf("%s %d", code, k.codes[code]))
		}
		ms := func(q float64) string { return fmt.Sprintf("%.2f", float64(k.hist.ValueAtQuantile(q))/1000) }
		tb.Rows = append(tb.Rows, []string{key[0], key[1], fmt.Sprint(k.hist.TotalCount()), ms(50), ms(99), fmt.Sprintf("%.2f", float64(k.hist.Max())/1000), strings.Join(codes, ", ")})
	}
	tb.Notes = append(tb.Notes,
		fmt.Sprintf("The crowd took %.1f s from the first arrival to the last answer; the sale started at %s. %d of %d shoppers had loaded pages, files and socket before the start; %d polls of the goods JSON, %d of them later than their second. Stock %d.",
			secs, start.Format(time.RFC3339), c.visits.Load(), len(c.tokens), c.polls.Load(), c.late.Load(), o.Stock),
		"Odd shoppers read with no cookie, even ones with their session cookie; every grab carries the shopper's token. Each shopper's socket subscribes the goods page's topics, reads once as static/goods.js does, then closes; the open pages are the live sockets: "+liveNote+".")
	if n := c.missing.Load(); n > 0 {
		tb.Notes = append(tb.Notes, fmt.Sprintf("%d shoppers found no live topic or no file on the pages they read (a page that failed to load).", n))
	}
	return tb
}
