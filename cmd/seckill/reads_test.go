package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/views/i18n"
)

// commandCounter counts the Redis commands a process sends, leaving out
// those of its background loops (the catalog's generation poll, pub/sub).
type commandCounter struct {
	mu   sync.Mutex
	seen map[string]int
	n    atomic.Int64
}

// onCommand is a go-redis hook that calls itself with every command a
// client sends, alone or in a pipeline.
type onCommand func(redis.Cmder)

func (f onCommand) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f onCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}
func (f onCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			f(cmd)
		}
		return next(ctx, cmds)
	}
}

// onReadCommand is a go-redis hook that hands on every command sent for a
// read this test made: the reads ask for Chinese (readerCookie), so their
// requests' contexts carry that language to every Redis call made for
// them, while a process's own loops, on contexts of their own, carry none.
// Counting by context keeps a busy machine's loops out of the count (an
// idle spell compared by the clock did not).
type onReadCommand func(redis.Cmder)

func (f onReadCommand) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f onReadCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if l, ok := i18n.Given(ctx); ok && l == i18n.Zh {
			f(cmd)
		}
		return next(ctx, cmd)
	}
}
func (f onReadCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if l, ok := i18n.Given(ctx); ok && l == i18n.Zh {
			for _, cmd := range cmds {
				f(cmd)
			}
		}
		return next(ctx, cmds)
	}
}

// readerCookie asks for Chinese pages, marking the requests whose Redis
// commands onReadCommand counts.
const readerCookie = "seckill_lang=zh"

func (c *commandCounter) note(cmd redis.Cmder) {
	name := cmd.Name()
	if args := cmd.Args(); name == "get" && len(args) > 1 && (strings.HasPrefix(fmt.Sprint(args[1]), "seckill:catalog") || fmt.Sprint(args[1]) == "seckill:goods:lost") {
		return // the catalog's poll and the phantom watch's, on their own clocks
	}
	if backgroundCommands[name] {
		return
	}
	c.mu.Lock()
	c.seen[fmt.Sprint(cmd.Args())]++
	c.mu.Unlock()
	c.n.Add(1)
}

// backgroundCommands are what a serving process sends on its own, whatever
// it is asked: live events, the rate limits' membership, the switches'
// reload, the refusal memo's poll. None reads what a shopper reads.
var backgroundCommands = map[string]bool{"ping": true, "publish": true, "spublish": true, "subscribe": true, "ssubscribe": true,
	"unsubscribe": true, "sunsubscribe": true, "zadd": true, "zremrangebyscore": true, "zcard": true, "expire": true, "pexpire": true,
	"hgetall": true, "evalsha": true, "eval": true, "set": true, "incr": true, "del": true}

// readGoods reads GET /api/goods/{id} from base: the status and the goods.
func readGoods(t *testing.T, base string, id int64) (int, goodsJSON) {
	t.Helper()
	r := send(t, "GET", fmt.Sprintf("%s/api/goods/%d", base, id), nil, nil)
	var out struct{ Goods goodsJSON }
	json.Unmarshal(r.body, &out)
	return r.status, out.Goods
}

// waitSeen polls cond until it holds, failing after a minute (a bound no
// event-driven change comes near; the time it took is logged).
func waitSeen(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, time.Minute, what, cond)
	took := time.Since(start)
	t.Logf("%s: seen after %v", what, took.Round(time.Millisecond))
	return took
}

// Shoppers' reads come from each process's memory: after a grab, an edit,
// a hide and a sale's end made through one process, the other process's
// reads show the change (carried by live events and the catalog's
// generation, with no read of the store); in steady state reads send no
// Redis command; an unknown ID is a 404 from memory.
func TestReadsFromMemoryOnTwoProcesses(t *testing.T) {
	a := startApp(t)
	b := startPeer(t, a)
	mt, g := a.liveGoods(10, 5)
	shopper, _ := a.newUser()

	// The peer learns of the new goods at once: an unknown ID is checked
	// against the catalog's generation before it is called not found.
	if st, got := readGoods(t, b.URL, g.ID); st != 200 || got.Remaining != 10 {
		t.Fatalf("the peer reads new goods %d: %d %+v, want 200 with 10 left", g.ID, st, got)
	}

	// A grab on one process moves the stock the other reads.
	a.grab(shopper, g.ID)
	waitSeen(t, "the peer reads the stock a grab left", func() bool {
		st, got := readGoods(t, b.URL, g.ID)
		return st == 200 && got.Remaining == 9
	})

	// Steady state: reads of the peer send no Redis command.
	counter := &commandCounter{seen: map[string]int{}}
	b.Redis.Client.AddHook(onReadCommand(counter.note))
	paths := []string{fmt.Sprintf("/api/goods/%d", g.ID), fmt.Sprintf("/api/slots/%d/goods", g.SlotID), "/api/slots", "/", fmt.Sprintf("/goods/%d", g.ID)}
	const reads = 100
	for i := 0; i < reads; i++ {
		for _, p := range paths {
			if r := send(t, "GET", b.URL+p, map[string]string{"Cookie": readerCookie}, nil); r.status != 200 {
				t.Fatalf("GET %s: %d %s", p, r.status, r.body)
			}
		}
	}
	if readCount := counter.n.Load(); readCount > reads/10 {
		counter.mu.Lock()
		seen := fmt.Sprint(counter.seen)
		counter.mu.Unlock()
		t.Fatalf("%d reads sent %d Redis commands of their own (%s)", reads*len(paths), readCount, seen)
	}

	// An edit's new title, on the JSON and the page, anonymous and not.
	var edited struct{ Goods goodsJSON }
	body := map[string]any{"slot_id": g.SlotID, "title": "Renamed goods", "description": "nice", "price_cents": 10000,
		"seckill_price_cents": 2500, "stock": 10, "limit_per_user": 5}
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, body, &edited); st != 200 {
		t.Fatalf("edit goods: %d", st)
	}
	waitSeen(t, "the peer reads the new title", func() bool {
		_, got := readGoods(t, b.URL, g.ID)
		page := send(t, "GET", fmt.Sprintf("%s/goods/%d", b.URL, g.ID), nil, nil)
		return got.Title == "Renamed goods" && strings.Contains(string(page.body), "Renamed goods")
	})

	// Hidden: not found on the peer, and gone from its slot's list.
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, map[string]any{"hidden": true}, nil); st != 200 {
		t.Fatalf("hide goods: %d", st)
	}
	waitSeen(t, "the peer hides the goods", func() bool {
		st, _ := readGoods(t, b.URL, g.ID)
		list := send(t, "GET", fmt.Sprintf("%s/api/slots/%d/goods", b.URL, g.SlotID), nil, nil)
		return st == 404 && !strings.Contains(string(list.body), "Renamed goods")
	})
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, map[string]any{"hidden": false}, nil); st != 200 {
		t.Fatalf("show goods: %d", st)
	}

	// Ended: the peer reads it ended.
	if st := a.call("POST", fmt.Sprintf("/api/admin/goods/%d/end", g.ID), mt, nil, nil); st != 200 {
		t.Fatalf("end goods: %d", st)
	}
	waitSeen(t, "the peer reads the sale ended", func() bool {
		r := send(t, "GET", fmt.Sprintf("%s/api/goods/%d", b.URL, g.ID), nil, nil)
		var out struct {
			Goods struct{ State string } `json:"goods"`
		}
		json.Unmarshal(r.body, &out)
		return r.status == 200 && out.Goods.State == "ended"
	})

	// Made-up IDs are 404 without a read of the store: past the highest ID
	// the catalog knows, and at most one shared generation check each
	// unknownCheckGap (here they come one by one, so each may check).
	counter.n.Store(0)
	for i := int64(1); i <= 50; i++ {
		if st, _ := readGoods(t, b.URL, g.ID+1000+i); st != 404 {
			t.Fatalf("made-up goods %d: %d, want 404", g.ID+1000+i, st)
		}
	}
	if n := counter.n.Load(); n > 50 {
		t.Fatalf("50 made-up IDs sent %d Redis commands, want at most one generation check each", n)
	}
	gen, err := live.CatalogGeneration(context.Background(), b.Redis.Client)
	if err != nil || gen < 4 {
		t.Fatalf("catalog generation %d (%v), want one bump per change (at least 4)", gen, err)
	}
}

// Pages and public JSON are HTTP-cacheable: an ETag and 304, public for a
// reader not signed in and with no cookie set, private for a signed-in one
// (whose page, naming them, is never the one served to anybody else);
// compressed when asked; static files under content-hashed names, immutable.
func TestReadsCacheable(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(10, 5)
	alice, _ := a.newUser()
	var me struct {
		User struct{ Username string } `json:"user"`
	}
	a.call("GET", "/api/me", alice, nil, &me)

	for _, p := range []string{"/", fmt.Sprintf("/goods/%d", g.ID), "/slots", "/api/slots", fmt.Sprintf("/api/goods/%d", g.ID), fmt.Sprintf("/api/slots/%d/goods", g.SlotID)} {
		r := send(t, "GET", a.URL+p, nil, nil)
		if r.status != 200 || r.header.Get("ETag") == "" || r.header.Get("Set-Cookie") != "" ||
			r.header.Get("Cache-Control") != "public, max-age=1, stale-while-revalidate=5" {
			t.Fatalf("anonymous GET %s: %d ETag %q Set-Cookie %q Cache-Control %q", p, r.status, r.header.Get("ETag"), r.header.Get("Set-Cookie"), r.header.Get("Cache-Control"))
		}
		if again := send(t, "GET", a.URL+p, map[string]string{"If-None-Match": r.header.Get("ETag")}, nil); again.status != 304 || len(again.body) != 0 {
			t.Fatalf("GET %s with its ETag: %d (%d bytes), want 304 and no body", p, again.status, len(again.body))
		}
		for _, junk := range []string{`"nope"`, strings.Repeat("x", 5000), `W/""`, `,,,`} {
			// The whole answer, or a header too large to read (431): never a 304.
			if r := send(t, "GET", a.URL+p, map[string]string{"If-None-Match": junk}, nil); r.status != 200 && r.status != 431 {
				t.Fatalf("GET %s with If-None-Match %.20q: %d, want 200 (or 431 for a header too large)", p, junk, r.status)
			}
		}
		signed := send(t, "GET", a.URL+p, bearer(alice), nil)
		if signed.status != 200 || !strings.HasPrefix(signed.header.Get("Cache-Control"), "private") {
			t.Fatalf("signed-in GET %s: %d Cache-Control %q, want private", p, signed.status, signed.header.Get("Cache-Control"))
		}
	}
	// A signed-in page names its reader; the anonymous one, rendered after
	// it and served from memory, does not.
	mine := send(t, "GET", a.URL+"/", map[string]string{"Cookie": "seckill_session=" + alice}, nil)
	anon := send(t, "GET", a.URL+"/", nil, nil)
	if !strings.Contains(string(mine.body), `data-testid="whoami"`) || strings.Contains(string(anon.body), `data-testid="whoami"`) {
		t.Fatalf("whoami on the signed-in page: %v; on the anonymous one: %v", strings.Contains(string(mine.body), "whoami"), strings.Contains(string(anon.body), "whoami"))
	}
	// The sign-in page has a form: it, and only it, sets the CSRF cookie.
	if r := send(t, "GET", a.URL+"/login", nil, nil); !strings.Contains(r.header.Get("Set-Cookie"), "seckill_csrf") {
		t.Fatalf("sign-in page Set-Cookie %q, want the CSRF cookie", r.header.Get("Set-Cookie"))
	}

	// Compressed where accepted, the same bytes once undone.
	req, _ := http.NewRequest("GET", a.URL+"/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET / accepting gzip: Content-Encoding %q", res.Header.Get("Content-Encoding"))
	}

	// Static files: pages link content-hashed names, kept a year.
	page := string(send(t, "GET", a.URL+"/", nil, nil).body)
	i := strings.Index(page, `href="/static/app.`)
	if i < 0 {
		t.Fatalf("the front page links no content-hashed app.css")
	}
	href := page[i+len(`href="`):]
	href = href[:strings.IndexByte(href, '"')]
	if r := send(t, "GET", a.URL+href, nil, nil); r.status != 200 || r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("GET %s: %d Cache-Control %q", href, r.status, r.header.Get("Cache-Control"))
	}
	if r := send(t, "GET", a.URL+"/static/app.0000000000.css", nil, nil); r.status != 404 {
		t.Fatalf("a hashed name of no file: %d, want 404", r.status)
	}
}

// A signed-in shopper's page is made once for every shopper: each reader
// gets their own name and CSRF token spliced in (plain and gzip alike, the
// same bytes once undone), an ETag of their own, none of the made page's
// markers, no Redis command per read; their own orders come from the API
// (static/goods.js), so a held order is not in the page.
func TestSignedInPagesSharedAndTheirOwn(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(10, 1)
	alice, _ := a.newUser()
	bob, _ := a.newUser()
	name := func(token string) string {
		var me struct {
			User struct{ Username string } `json:"user"`
		}
		a.call("GET", "/api/me", token, nil, &me)
		return me.User.Username
	}
	aliceName, bobName := name(alice), name(bob)
	a.grab(alice, g.ID)
	cookie := func(token string) map[string]string { return map[string]string{"Cookie": "seckill_session=" + token} }
	// tokenOn is the CSRF token a page carries in its head.
	tokenOn := func(page []byte) string {
		s := string(page)
		i := strings.Index(s, `<meta name="csrf-token" content="`)
		if i < 0 {
			return ""
		}
		s = s[i+len(`<meta name="csrf-token" content="`):]
		return s[:strings.IndexByte(s, '"')]
	}
	// rendered per request for the reader: the token to expect.
	aliceToken := tokenOn(send(t, "GET", a.URL+"/me/orders", cookie(alice), nil).body)
	bobToken := tokenOn(send(t, "GET", a.URL+"/me/orders", cookie(bob), nil).body)
	if aliceToken == "" || aliceToken == bobToken {
		t.Fatalf("CSRF tokens on My orders: %q and %q, want two of their own", aliceToken, bobToken)
	}
	gunzip := func(path, token string) ([]byte, http.Header) {
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("Cookie", "seckill_session="+token)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("GET %s accepting gzip: Content-Encoding %q", path, res.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatalf("GET %s: gzip: %v", path, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("GET %s: the gzip body does not read (%v)", path, err)
		}
		return body, res.Header
	}
	for _, p := range []string{"/", "/slots", fmt.Sprintf("/goods/%d", g.ID)} {
		for _, who := range []struct{ token, name, csrf, other string }{{alice, aliceName, aliceToken, bobName}, {bob, bobName, bobToken, aliceName}} {
			plain := send(t, "GET", a.URL+p, map[string]string{"Cookie": "seckill_session=" + who.token, "Accept-Encoding": "identity"}, nil)
			zipped, zh := gunzip(p, who.token)
			body := string(plain.body)
			if plain.status != 200 || !strings.Contains(body, `data-testid="whoami">`+who.name+`<`) || strings.Contains(body, who.other) ||
				tokenOn(plain.body) != who.csrf || strings.Contains(body, "SECKILLuser") || strings.Contains(body, "SECKILLcsrf") {
				t.Fatalf("GET %s as %s: %d, names them %v, names the other %v, token %q want %q, markers left %v", p, who.name, plain.status,
					strings.Contains(body, who.name), strings.Contains(body, who.other), tokenOn(plain.body), who.csrf, strings.Contains(body, "SECKILL"))
			}
			if string(zipped) != body {
				t.Fatalf("GET %s as %s: the gzip body (%d bytes) is not the plain one (%d bytes)", p, who.name, len(zipped), len(body))
			}
			if !strings.HasPrefix(plain.header.Get("Cache-Control"), "private") || plain.header.Get("ETag") == "" || zh.Get("ETag") != plain.header.Get("ETag") {
				t.Fatalf("GET %s as %s: Cache-Control %q, ETag %q (gzip %q)", p, who.name, plain.header.Get("Cache-Control"), plain.header.Get("ETag"), zh.Get("ETag"))
			}
			if r := send(t, "GET", a.URL+p, map[string]string{"Cookie": "seckill_session=" + who.token, "If-None-Match": plain.header.Get("ETag")}, nil); r.status != 304 {
				t.Fatalf("GET %s as %s with their ETag: %d, want 304", p, who.name, r.status)
			}
		}
		ea := send(t, "GET", a.URL+p, cookie(alice), nil).header.Get("ETag")
		if r := send(t, "GET", a.URL+p, map[string]string{"Cookie": "seckill_session=" + bob, "If-None-Match": ea}, nil); r.status != 200 {
			t.Fatalf("GET %s as bob with alice's ETag: %d, want her page not to be his", p, r.status)
		}
	}
	// Alice's order is not in the page made for every shopper: goods.js reads it.
	if page := send(t, "GET", fmt.Sprintf("%s/goods/%d", a.URL, g.ID), cookie(alice), nil); strings.Contains(string(page.body), "data-goods-order=") ||
		!strings.Contains(string(page.body), `name="seckill-fetch-own"`) {
		t.Fatalf("alice's goods page lists her orders in its HTML, or does not ask its script to fetch them")
	}

	// Steady state: no Redis command of their own.
	counter := &commandCounter{seen: map[string]int{}}
	a.Redis.Client.AddHook(onReadCommand(counter.note))
	const reads = 50
	for i := 0; i < reads; i++ {
		for _, p := range []string{"/", "/slots", fmt.Sprintf("/goods/%d", g.ID)} {
			if r := send(t, "GET", a.URL+p, map[string]string{"Cookie": "seckill_session=" + alice + "; " + readerCookie}, nil); r.status != 200 {
				t.Fatalf("GET %s: %d", p, r.status)
			}
		}
	}
	if readCount := counter.n.Load(); readCount > reads/10 {
		counter.mu.Lock()
		seen := fmt.Sprint(counter.seen)
		counter.mu.Unlock()
		t.Fatalf("%d signed-in page reads sent %d Redis commands of their own (%s)", reads*3, readCount, seen)
	}
}
