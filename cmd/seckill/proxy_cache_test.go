package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// shippedNginx is the micro-cache configuration the operators' guide ships.
const shippedNginx = "../../docs/ops/nginx.conf"

// nginxBinary is nginx on PATH, or Debian's /usr/sbin/nginx (not on a
// user's PATH), or "".
func nginxBinary() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}

// renderNginx is the shipped configuration with the test's listen address,
// its web processes for the example upstream server, and the cache folder,
// logs and temporary folders in dir: everything else is the file as shipped.
func renderNginx(t *testing.T, dir, listen string, upstreams []string) string {
	t.Helper()
	raw, err := os.ReadFile(shippedNginx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	replace := func(old, new string) {
		t.Helper()
		if strings.Count(cfg, old) != 1 {
			t.Fatalf("docs/ops/nginx.conf: want exactly one %q to put the test's own in", old)
		}
		cfg = strings.Replace(cfg, old, new, 1)
	}
	replace("        listen 80;\n", "        listen "+listen+";\n")
	replace("/var/cache/nginx/seckill ", filepath.Join(dir, "cache")+" ")
	// Every line written as it happens, for the log a failed test shows.
	replace("access_log /var/log/nginx/seckill-access.log seckill buffer=64k flush=1s;", "access_log "+filepath.Join(dir, "access.log")+" seckill;")
	replace("error_log /var/log/nginx/error.log ", "error_log "+filepath.Join(dir, "error.log")+" ")
	// nginx's compiled-in temporary folders (/var/lib/nginx) are root's.
	var temps strings.Builder
	temps.WriteString("http {\n")
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&temps, "    %s_temp_path %s;\n", d, filepath.Join(dir, "temp-"+d))
	}
	replace("http {\n", temps.String())
	begin, end := strings.Index(cfg, "        # BEGIN upstream servers\n"), strings.Index(cfg, "        # END upstream servers\n")
	if begin < 0 || end < begin {
		t.Fatal("docs/ops/nginx.conf: no \"# BEGIN upstream servers\" … \"# END upstream servers\" block")
	}
	var lines strings.Builder
	lines.WriteString("        # BEGIN upstream servers\n")
	for _, s := range upstreams {
		fmt.Fprintf(&lines, "        server %s;\n", s)
	}
	cfg = cfg[:begin] + lines.String() + cfg[end:]
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startNginx runs the shipped configuration in front of upstream and
// returns the proxy's base URL once it answers. nginx runs as one process
// (master_process off) so it dies with the test binary (dieWithTest): a
// master's workers would outlive it.
func startNginx(t *testing.T, bin, upstream string) string {
	t.Helper()
	dir := t.TempDir()
	front := freeAddr(t)
	cfg := renderNginx(t, dir, front, []string{upstream})
	errLog := filepath.Join(dir, "error.log")
	args := []string{"-p", dir + "/", "-e", errLog, "-c", cfg,
		"-g", "pid " + filepath.Join(dir, "nginx.pid") + "; daemon off; master_process off;"}
	if out, err := exec.Command(bin, append([]string{"-t"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	proxy := dieWithTest(exec.Command(bin, args...))
	var out bytes.Buffer
	proxy.Stdout, proxy.Stderr = &out, &out
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { proxy.Wait(); close(exited) }()
	t.Cleanup(func() {
		proxy.Process.Signal(syscall.SIGQUIT) // graceful: the access log is written out
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			proxy.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(errLog)
			t.Logf("nginx's output:\n%s\nnginx's error log:\n%s", out.String(), tail(string(b), 40))
			b, _ = os.ReadFile(filepath.Join(dir, "access.log"))
			lines := strings.Split(tail(string(b), 40), "\n")
			for i, l := range lines {
				if len(l) > 300 {
					lines[i] = l[:300] + "…"
				}
			}
			t.Logf("nginx's access log (last lines):\n%s", strings.Join(lines, "\n"))
		}
	})
	base := "http://" + front
	eventually(t, time.Minute, "nginx to answer", func() bool {
		select {
		case <-exited:
			b, _ := os.ReadFile(errLog)
			t.Fatalf("nginx exited: %s\n%s", out.String(), b)
		default:
		}
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return base
}

// appGets is the count of GET requests the process has answered, by route
// (every status), read from its /metrics.
func appGets(t *testing.T, a *testApp) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+hostsMetricsToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", res.StatusCode)
	}
	series := regexp.MustCompile(`^seckill_http_requests_total\{method="GET",route="([^"]*)",status="\d+"\} (\S+)$`)
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := series.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			out[m[1]] += v
		}
	}
	return out
}

// proxyReader is one browser behind the proxy: its own cookies, its language,
// its encodings.
type proxyReader struct {
	t       *testing.T
	name    string
	client  *http.Client
	headers map[string]string
}

func newProxyReader(t *testing.T, name string, headers map[string]string) *proxyReader {
	jar, _ := cookiejar.New(nil)
	return &proxyReader{t: t, name: name, headers: headers, client: &http.Client{
		Jar: jar,
		// The test reads Content-Encoding itself: no transparent gzip.
		Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       time.Minute,
	}}
}

// proxyAnswer is a response with its body read (and decompressed).
type proxyAnswer struct {
	status int
	header http.Header
	body   string
}

func (r *proxyReader) do(method, url string, body any, extra map[string]string) proxyAnswer {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	res, err := r.client.Do(req)
	if err != nil {
		r.t.Fatalf("%s: %s %s: %v", r.name, method, url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		r.t.Fatalf("%s: %s %s: reading the body: %v", r.name, method, url, err)
	}
	switch enc := res.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip", "br":
		if !strings.Contains(req.Header.Get("Accept-Encoding"), enc) {
			r.t.Fatalf("%s: %s %s: Content-Encoding %s, asked for %q", r.name, method, url, enc, req.Header.Get("Accept-Encoding"))
		}
		if method == "HEAD" {
			break
		}
		if enc == "gzip" {
			raw, err = fasthttp.AppendGunzipBytes(nil, raw)
		} else {
			raw, err = fasthttp.AppendUnbrotliBytes(nil, raw)
		}
		if err != nil {
			r.t.Fatalf("%s: %s %s: Content-Encoding %s, but: %v", r.name, method, url, enc, err)
		}
	default:
		r.t.Fatalf("%s: %s %s: Content-Encoding %q", r.name, method, url, enc)
	}
	return proxyAnswer{res.StatusCode, res.Header, string(raw)}
}

func (r *proxyReader) get(url string) proxyAnswer { r.t.Helper(); return r.do("GET", url, nil, nil) }

var pageLang = regexp.MustCompile(`<html[^>]* lang="([^"]*)"`)

// The shipped nginx micro-cache (docs/ops/nginx.conf) in front of a seckill
// process: a crowd of anonymous readers of the same pages and JSON makes
// at most about one request a second per URL reach the process; signed-in
// shoppers always reach it and never get, or give, anyone else's page;
// every reader gets the language and encoding the process would have
// given it; odd requests cache nothing wrong; the live socket upgrades
// through it.
func TestMicroCacheInFrontOfTheApp(t *testing.T) {
	bin := nginxBinary()
	if bin == "" {
		t.Skip("micro-cache test: nginx is not installed (apt-get install nginx); .ci/run installs it")
	}
	if testing.Short() {
		t.Skip("micro-cache test sends a crowd through nginx for several seconds")
	}
	a := startApp(t, func(c *Config) {
		c.MetricsToken = hostsMetricsToken
		c.TrustedProxies = "127.0.0.1"
	})
	px := startNginx(t, bin, strings.TrimPrefix(a.URL, "http://"))

	merchant, _ := a.newMerchant()
	sl := a.createSlot(merchant, -time.Minute, time.Hour)
	g := a.createGoods(merchant, sl.ID, 100, 1)
	goodsPage, goodsAPI := fmt.Sprintf("/goods/%d", g.ID), fmt.Sprintf("/api/goods/%d", g.ID)
	// The routes the process counts these URLs under.
	routes := map[string]string{"/": "/", goodsPage: "/goods/:id", goodsAPI: "/api/goods/:id"}
	browser := map[string]string{"Accept-Encoding": "gzip, deflate, br", "Accept-Language": "en-US,en;q=0.9"}

	t.Run("crowd", func(t *testing.T) {
		// About 1,000 requests a second to each URL for five seconds, from
		// anonymous readers on kept-alive connections; a slow machine
		// takes longer, and the rate is counted over the time it took.
		const perURL, every, workers = 5000, time.Millisecond, 16
		client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 3 * workers}, Timeout: time.Minute}
		urls := []string{goodsAPI, goodsPage, "/"}
		type tally struct {
			mu       sync.Mutex
			statuses map[int]int
			cache    map[string]int
			errs     int
			firstErr error
		}
		tallies := make([]*tally, len(urls))
		before := appGets(t, a)
		start := time.Now()
		var wg sync.WaitGroup
		for i, u := range urls {
			tl := &tally{statuses: map[int]int{}, cache: map[string]int{}}
			tallies[i] = tl
			var next atomic.Int64
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						n := next.Add(1) - 1
						if n >= perURL {
							return
						}
						if d := time.Until(start.Add(time.Duration(n) * every)); d > 0 {
							time.Sleep(d)
						}
						req, _ := http.NewRequest("GET", px+u, nil)
						for k, v := range browser {
							req.Header.Set(k, v)
						}
						res, err := client.Do(req)
						if err == nil {
							_, err = io.Copy(io.Discard, res.Body)
							res.Body.Close()
						}
						tl.mu.Lock()
						if err != nil {
							tl.errs++
							if tl.firstErr == nil {
								tl.firstErr = err
							}
						} else {
							tl.statuses[res.StatusCode]++
							tl.cache[res.Header.Get("X-Cache-Status")]++
						}
						tl.mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		elapsed := time.Since(start)
		after := appGets(t, a)
		for i, u := range urls {
			tl := tallies[i]
			reached := after[routes[u]] - before[routes[u]]
			rate := reached / elapsed.Seconds()
			t.Logf("GET %s: %d requests in %.2f s (%.0f a second) through nginx, %v by status, %v by cache status; %.0f reached the app: %.2f a second",
				u, perURL, elapsed.Seconds(), perURL/elapsed.Seconds(), tl.statuses, tl.cache, reached, rate)
			if tl.errs > 0 {
				t.Errorf("GET %s: %d requests failed through nginx, the first: %v", u, tl.errs, tl.firstErr)
			}
			if tl.statuses[http.StatusOK] != perURL {
				t.Errorf("GET %s: answers by status %v, want all %d 200", u, tl.statuses, perURL)
			}
			if rate > 2 {
				t.Errorf("GET %s: %.0f requests reached the app in %.2f s (%.2f a second), want at most 2 a second", u, reached, elapsed.Seconds(), rate)
			}
			if reached < 2 {
				t.Errorf("GET %s: %.0f requests reached the app in %.2f s: the one-second cache never fetched the answer again", u, reached, elapsed.Seconds())
			}
		}

		// A change shows through the cache: a grab takes one unit, and an
		// anonymous reader sees the stock fall (nginx counts whole seconds:
		// within about 2 s; the bound is only a generous backstop).
		shopper, _ := a.newUser()
		a.grab(shopper, g.ID)
		anon := newProxyReader(t, "anonymous", browser)
		changed := time.Now()
		eventually(t, time.Minute, "the grabbed unit to show through the cache", func() bool {
			var got goodsJSON
			var env struct{ Goods *goodsJSON }
			ans := anon.get(px + goodsAPI)
			if ans.status != http.StatusOK {
				return false
			}
			if json.Unmarshal([]byte(ans.body), &env) == nil && env.Goods != nil {
				got = *env.Goods
			} else if json.Unmarshal([]byte(ans.body), &got) != nil {
				return false
			}
			return got.Remaining == g.Stock-1
		})
		t.Logf("a grab showed in the cached GET %s after %s", goodsAPI, time.Since(changed).Round(time.Millisecond))
	})

	t.Run("shoppers", func(t *testing.T) {
		// Two shoppers sign up and sign in through the proxy (the session
		// cookie lands in their browsers), and an anonymous reader, take
		// turns at the same pages; which one goes first changes each round.
		shopperA, shopperB := newProxyReader(t, "shopper A", browser), newProxyReader(t, "shopper B", browser)
		var names []string
		for i, s := range []*proxyReader{shopperA, shopperB} {
			name := fmt.Sprintf("proxyshopper%c%d", 'a'+i, userSeq.Add(1))
			names = append(names, name)
			cred := map[string]string{"username": name, "password": "password123"}
			// As the page's script sends them: from the shop's own origin.
			origin := map[string]string{"Origin": px}
			if ans := s.do("POST", px+"/api/auth/register", cred, origin); ans.status != http.StatusCreated {
				t.Fatalf("register %s through nginx: %d %s", name, ans.status, ans.body)
			}
			ans := s.do("POST", px+"/api/auth/login", cred, origin)
			var auth authAnswer
			if ans.status != http.StatusOK || json.Unmarshal([]byte(ans.body), &auth) != nil || auth.Token == "" {
				t.Fatalf("log in %s through nginx: %d %s", name, ans.status, ans.body)
			}
			if !strings.Contains(strings.Join(ans.header.Values("Set-Cookie"), "\n"), "seckill_session=") {
				t.Fatalf("log in %s through nginx: no session cookie set: %v", name, ans.header)
			}
		}
		anon := newProxyReader(t, "anonymous", browser)
		readers := []*proxyReader{anon, shopperA, shopperB}
		owner := map[*proxyReader]string{shopperA: names[0], shopperB: names[1]}
		paths := []string{"/", goodsPage, "/slots", goodsAPI, "/api/slots", fmt.Sprintf("/api/slots/%d/goods", sl.ID)}
		hits := 0
		for round := 0; round < 12; round++ {
			for _, p := range paths {
				for k := range readers {
					r := readers[(k+round)%len(readers)]
					ans := r.get(px + p)
					if ans.status != http.StatusOK {
						t.Fatalf("%s: GET %s through nginx: %d", r.name, p, ans.status)
					}
					page := !strings.HasPrefix(p, "/api/")
					for who, name := range owner {
						if who != r && strings.Contains(ans.body, name) {
							t.Fatalf("%s got a GET %s answer naming %s (%s):\n%.600s", r.name, p, who.name, name, ans.body)
						}
					}
					if cs := ans.header.Get("X-Cache-Status"); r == anon {
						if c := ans.header.Values("Set-Cookie"); len(c) > 0 {
							t.Fatalf("anonymous GET %s through nginx set cookies %q", p, c)
						}
						if page && strings.Contains(ans.body, `data-testid="whoami"`) {
							t.Fatalf("anonymous GET %s through nginx shows someone signed in:\n%.600s", p, ans.body)
						}
						if cs == "HIT" || cs == "UPDATING" || cs == "STALE" {
							hits++
						}
					} else {
						if cs != "" {
							t.Fatalf("%s's GET %s was a cache candidate (X-Cache-Status %q)", r.name, p, cs)
						}
						if page && !strings.Contains(ans.body, `<span data-testid="whoami">`+owner[r]+`</span>`) {
							t.Fatalf("%s's GET %s through nginx does not show them signed in:\n%.600s", r.name, p, ans.body)
						}
					}
				}
			}
		}
		t.Logf("%d of the anonymous reader's %d answers came from the cache", hits, 12*len(paths))
		if hits == 0 {
			t.Errorf("no anonymous answer came from the cache")
		}
		// A Bearer token, not a cookie: never a cache candidate either.
		var auth authAnswer
		if st := a.call("POST", "/api/auth/login", "", map[string]string{"username": names[0], "password": "password123"}, &auth); st != http.StatusOK {
			t.Fatalf("log in: %d", st)
		}
		bearer := newProxyReader(t, "shopper A by Bearer", browser)
		for _, p := range []string{"/", goodsAPI, "/api/me"} {
			ans := bearer.do("GET", px+p, nil, map[string]string{"Authorization": "Bearer " + auth.Token})
			if ans.status != http.StatusOK || ans.header.Get("X-Cache-Status") != "" || strings.Contains(ans.body, names[1]) {
				t.Fatalf("GET %s with a Bearer token through nginx: %d, X-Cache-Status %q:\n%.300s", p, ans.status, ans.header.Get("X-Cache-Status"), ans.body)
			}
		}

		// The language each reader reads in is the one the process picks
		// for it, from the cache too (each asked twice).
		for _, h := range []map[string]string{
			{"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"},
			{"Accept-Language": "en-US,en;q=0.9"},
			{"Accept-Language": "fr-FR,fr;q=0.9,zh;q=0.8,en;q=0.7"},
			{"Accept-Language": "ja,en-US;q=0.9,zh-TW;q=0.8"},
			{"Accept-Language": "zh-TW"},
			{},
			{"Accept-Language": "en", "Cookie": "seckill_lang=zh-CN"},
			{"Accept-Language": "zh-CN", "Cookie": "seckill_lang=en"},
			{"Accept-Language": "zh-CN", "Cookie": "seckill_lang=fr"},
		} {
			direct := newProxyReader(t, "direct", h).get(a.URL + goodsPage)
			want := pageLang.FindStringSubmatch(direct.body)
			if want == nil {
				t.Fatalf("GET %s: no <html lang>:\n%.300s", goodsPage, direct.body)
			}
			for i := 0; i < 2; i++ {
				ans := newProxyReader(t, "reader", h).get(px + goodsPage)
				if got := pageLang.FindStringSubmatch(ans.body); got == nil || got[1] != want[1] {
					t.Errorf("headers %v: GET %s through nginx reads in %v (X-Cache-Status %q), the app itself in %q", h, goodsPage, got, ans.header.Get("X-Cache-Status"), want[1])
				}
			}
		}
	})

	t.Run("odd requests", func(t *testing.T) {
		anon := newProxyReader(t, "anonymous", browser)
		plain := newProxyReader(t, "no gzip", map[string]string{"Accept-Language": "en"})
		right := func(r *proxyReader, p string, ans proxyAnswer) {
			t.Helper()
			if ans.status != http.StatusOK {
				t.Fatalf("%s: clean GET %s after the odd ones: %d", r.name, p, ans.status)
			}
			if strings.HasPrefix(p, "/api/") {
				if !strings.Contains(ans.body, fmt.Sprintf(`"id":%d`, g.ID)) || !json.Valid([]byte(ans.body)) {
					t.Fatalf("%s: clean GET %s after the odd ones is not the goods:\n%.300s", r.name, p, ans.body)
				}
			} else if !strings.Contains(ans.body, g.Title) || !strings.Contains(ans.body, "</html>") {
				t.Fatalf("%s: clean GET %s after the odd ones is not the whole page:\n%.300s", r.name, p, ans.body)
			}
			if c := ans.header.Values("Set-Cookie"); len(c) > 0 {
				t.Fatalf("%s: clean GET %s set cookies %q", r.name, p, c)
			}
		}
		long := strings.Repeat("x", 10<<10)
		for _, p := range []string{goodsPage, goodsAPI} {
			// A 10 KB query string: refused, or answered as without it.
			ans := anon.get(px + p + "?q=" + long)
			if ans.status != http.StatusOK && (ans.status < 400 || ans.status >= 500) {
				t.Errorf("GET %s?q=<10 KB> through nginx: %d, want a 4xx or 200", p, ans.status)
			}
			// If-None-Match that matches nothing: the whole answer, or a 4xx.
			for _, inm := range []string{`"garbage"`, `W/"nope", "x`, `"` + strings.Repeat("z", 4000), "\xff\xfe garbage", `, ,`} {
				for _, r := range []*proxyReader{anon, plain} {
					ans := r.do("GET", px+p, nil, map[string]string{"If-None-Match": inm})
					switch {
					case ans.status >= 400 && ans.status < 500:
					case ans.status == http.StatusOK:
						right(r, p, ans)
					default:
						t.Errorf("%s: GET %s with If-None-Match %q through nginx: %d, want 200 or a 4xx", r.name, p, inm, ans.status)
					}
				}
			}
			// HEAD: headers only, and the body is still there for the GET after.
			if ans := anon.do("HEAD", px+p, nil, nil); ans.status != http.StatusOK || ans.body != "" {
				t.Errorf("HEAD %s through nginx: %d with %d bytes", p, ans.status, len(ans.body))
			}
			// Then clean requests: gzip for who asks for it, plain text for who does not.
			for _, r := range []*proxyReader{anon, plain, anon, plain} {
				ans := r.get(px + p)
				right(r, p, ans)
				if r == plain && ans.header.Get("Content-Encoding") != "" {
					t.Errorf("GET %s without Accept-Encoding through nginx: Content-Encoding %q", p, ans.header.Get("Content-Encoding"))
				}
			}
			if ans := plain.do("GET", px+p, nil, map[string]string{"Accept-Encoding": "gzip;q=0"}); ans.header.Get("Content-Encoding") != "" {
				t.Errorf("GET %s with Accept-Encoding gzip;q=0 through nginx: Content-Encoding %q", p, ans.header.Get("Content-Encoding"))
			}
			// The ETag the cache holds answers If-None-Match with 304.
			ans = anon.get(px + p)
			etag := ans.header.Get("ETag")
			if etag == "" {
				t.Errorf("GET %s through nginx: no ETag", p)
				continue
			}
			if got := anon.do("GET", px+p, nil, map[string]string{"If-None-Match": etag}); got.status != http.StatusNotModified && got.header.Get("ETag") == etag {
				t.Errorf("GET %s with If-None-Match %s (unchanged) through nginx: %d, want 304", p, etag, got.status)
			}
		}
	})

	t.Run("live socket", func(t *testing.T) {
		ws := dialWS(t, px, "")
		ws.Close()
	})
}
