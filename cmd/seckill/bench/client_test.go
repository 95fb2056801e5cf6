package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// The load client sends method, path, bearer and body as written, reads the
// status and body, keeps each worker on one connection, and redials after
// the server closes one.
func TestClient(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		if r.URL.Path == "/stream" { // no Content-Length: chunked
			w.(http.Flusher).Flush()
		}
		w.WriteHeader(http.StatusConflict)
		if r.URL.Path == "/headers" {
			fmt.Fprintf(w, `{"pow":%q,"adm":%q,"from":%q}`, r.Header.Get("X-Pow"), r.Header.Get("X-Admission"), r.Header.Get("X-Forwarded-For"))
			return
		}
		fmt.Fprintf(w, `{"m":%q,"p":%q,"a":%q,"b":%q}`, r.Method, r.URL.Path, r.Header.Get("Authorization"), body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c, err := NewClient(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 5; i++ {
		for w := 0; w < 2; w++ {
			st, body, err := c.Do(w, "POST", "/api/x/grab", "tok", []byte(`{"n":1}`))
			want := `{"m":"POST","p":"/api/x/grab","a":"Bearer tok","b":"{\"n\":1}"}`
			if err != nil || st != 409 || string(body) != want {
				t.Fatalf("worker %d: %d %s %v", w, st, body, err)
			}
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections for 2 workers, want 2 kept alive", n)
	}
	if st, _, err := c.Do(0, "GET", "/close", "", nil); err != nil || st != 409 {
		t.Fatalf("close: %d %v", st, err)
	}
	if st, body, err := c.Do(0, "GET", "/again", "", nil); err != nil || st != 409 || len(body) == 0 {
		t.Fatalf("after close: %d %s %v", st, body, err)
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want a redial after Connection: close", n)
	}
	if _, _, err := c.Do(1, "GET", "/stream", "", nil); err == nil {
		t.Fatal("a chunked answer was read as if it had a length")
	}
	st, body, err := c.DoHeaders(1, "10.0.0.9", "POST", "/headers", "tok", []string{"X-Pow: c:1:s", "X-Admission: adm"}, nil)
	if want := `{"pow":"c:1:s","adm":"adm","from":"10.0.0.9"}`; err != nil || st != 409 || string(body) != want {
		t.Fatalf("extra headers: %d %s %v, want %s", st, body, err, want)
	}
	if _, err := NewClient("ftp://x", 1); err == nil {
		t.Fatal("a non-http base was accepted")
	}
}

// A kept-alive connection the server closed while it sat idle fails the
// next request written on it: a read is sent again on a fresh connection,
// a write is not (it may have been applied).
func TestClientSendsAReadAgainOnAClosedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var served atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // one answer a connection, then closed as an idle one is
				defer conn.Close()
				r := bufio.NewReader(conn)
				if _, err := http.ReadRequest(r); err != nil {
					return
				}
				served.Add(1)
				conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			}()
		}
	}()
	c, err := NewClient("http://"+ln.Addr().String(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if st, body, err := c.Do(0, "GET", "/x", "", nil); err != nil || st != 200 || string(body) != "ok" {
			t.Fatalf("read %d on a connection the server closed: %d %q %v", i, st, body, err)
		}
	}
	if _, _, err := c.Do(0, "POST", "/x", "", nil); err == nil {
		t.Fatalf("a write on a connection the server closed was sent again (%d answered)", served.Load())
	}
}
