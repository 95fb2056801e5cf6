package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawExchange writes req on a fresh connection to the app and reads one answer.
func rawExchange(t *testing.T, a *testApp, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(a.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, c)
}

func readAnswer(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}

// wantJSONError fails unless the answer is status with the contract's JSON error code.
func wantJSONError(t *testing.T, what string, res *http.Response, body string, status int, code string) {
	t.Helper()
	var e apiError
	if res.StatusCode != status || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") ||
		json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != code {
		t.Errorf("%s: got %d %s %q, want %d JSON %q", what, res.StatusCode, res.Header.Get("Content-Type"), body, status, code)
	}
}

// Bodies over 64 KiB, oversized headers and malformed requests get the
// contract's JSON under /api, even when fasthttp refuses them itself.
func TestAbuseDoorsHTTPLayerAnswersJSON(t *testing.T) {
	a := startApp(t)
	host := strings.TrimPrefix(a.URL, "http://")

	// A 10 MB body is refused on its declared length, before a byte of it is sent.
	res, body := rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
	wantJSONError(t, "10 MB declared body", res, body, 413, "too_large")

	// Just over the limit, declared.
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 65537\r\n\r\n")
	wantJSONError(t, "65537-byte declared body", res, body, 413, "too_large")

	// A chunked body is cut off once it passes the limit. The chunk is
	// exactly one byte over, so nothing is left unread when the server closes.
	over := strings.Repeat("x", 64<<10+1)
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		strconv.FormatInt(int64(len(over)), 16)+"\r\n"+over+"\r\n")
	wantJSONError(t, "chunked body over 64 KiB", res, body, 413, "too_large")

	// A 20 KB cookie: 431 with too_large.
	res, body = rawExchange(t, a, "GET /api/me HTTP/1.1\r\nHost: "+host+"\r\nCookie: c="+strings.Repeat("a", 20<<10)+"\r\n\r\n")
	wantJSONError(t, "20 KB cookie", res, body, 431, "too_large")

	// A header line fasthttp cannot parse: 400 invalid.
	res, body = rawExchange(t, a, "GET /api/me HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: nope\r\n\r\n")
	wantJSONError(t, "malformed header", res, body, 400, "invalid")

	// Broken chunked framing: 400 invalid.
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	wantJSONError(t, "broken chunked body", res, body, 400, "invalid")

	// Pages still get pages.
	res, body = rawExchange(t, a, "GET /login HTTP/1.1\r\nHost: "+host+"\r\nCookie: c="+strings.Repeat("a", 20<<10)+"\r\n\r\n")
	if res.StatusCode != 431 || strings.Contains(res.Header.Get("Content-Type"), "json") {
		t.Errorf("page with a 20 KB cookie: %d %s, want 431 and no JSON", res.StatusCode, res.Header.Get("Content-Type"))
	}

	// Bodies within the limit still arrive whole, chunked or not, and forms too.
	name := fmt.Sprintf("d%d", time.Now().UnixNano()%1e9)
	reg := `{"username":"` + name + `","password":"password123","pad":"` + strings.Repeat("p", 60<<10) + `"}`
	res, body = rawExchange(t, a, "POST /api/auth/register HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		strconv.FormatInt(int64(len(reg)), 16)+"\r\n"+reg+"\r\n0\r\n\r\n")
	if res.StatusCode != 201 {
		t.Errorf("60 KiB chunked registration: %d %s", res.StatusCode, body)
	}
	login := `{"username":"` + name + `","password":"password123"}`
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(login))+"\r\n\r\n"+login)
	if res.StatusCode != 200 {
		t.Errorf("login: %d %s", res.StatusCode, body)
	}
	form := url.Values{"username": {name}, "password": {"password123"}, "pad": {strings.Repeat("f", 20<<10)}}.Encode()
	res, _ = rawExchange(t, a, "POST /login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: "+strconv.Itoa(len(form))+"\r\n\r\n"+form)
	if res.StatusCode != 403 { // no CSRF token: the form was read and judged, not refused for its size
		t.Errorf("20 KiB form: %d, want 403 for the missing CSRF token", res.StatusCode)
	}
}

// blockedInBodyRead counts the server goroutines waiting for a request body.
func blockedInBodyRead() int {
	var buf bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n := 0
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(rec, "fasthttp.appendBodyFixedSize") {
			count, _, _ := strings.Cut(rec, " @")
			count = strings.TrimPrefix(count, "goroutine profile: total ")
			if i := strings.LastIndexByte(count, '\n'); i >= 0 {
				count = count[i+1:]
			}
			c, _ := strconv.Atoi(count)
			n += c
		}
	}
	return n
}

func memStats() runtime.MemStats {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}

// A client that declares a 64 KiB body and trickles it must not make the
// server hold 64 KiB for it: 1,000 such connections cost at most 64 MiB.
func TestAbuseDoorsSlowBodiesAreCheap(t *testing.T) {
	const conns = 1000
	a := startApp(t)
	host := strings.TrimPrefix(a.URL, "http://")
	before := memStats()
	head := "POST /api/auth/login HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"
	var cs []net.Conn
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	eventually(t, 60*time.Second, "every connection to wait for its body", func() bool { return blockedInBodyRead() >= conns })
	after := memStats()
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	stacks := int64(after.StackInuse) - int64(before.StackInuse)
	t.Logf("%d connections declaring 64 KiB and sending 1 byte: heap in use +%.1f MiB (%.1f KiB each), goroutine stacks +%.1f MiB (%.1f KiB each); client side included",
		conns, float64(grown)/(1<<20), float64(grown)/conns/1024, float64(stacks)/(1<<20), float64(stacks)/conns/1024)
	if grown > 64<<20 {
		t.Errorf("heap grew %.1f MiB for %d slow bodies, want at most 64 MiB", float64(grown)/(1<<20), conns)
	}
	// They are still served: the last sends the rest of its body and gets its answer.
	last := cs[len(cs)-1]
	if _, err := io.WriteString(last, strings.Repeat(" ", 65534)+"}"); err != nil {
		t.Fatal(err)
	}
	last.SetReadDeadline(time.Now().Add(20 * time.Second))
	res, body := readAnswer(t, last)
	wantJSONError(t, "the completed slow body", res, body, 401, "unauthorized")
}
