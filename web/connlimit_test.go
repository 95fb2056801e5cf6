package web

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// dialN opens n connections to ln and returns them.
func dialN(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// closedByPeer tells whether the server closed c (it sends nothing otherwise).
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// serve accepts on l until it is closed, handing each accepted connection to accepted.
func serve(l net.Listener, accepted chan<- net.Conn) {
	for {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}
}

func TestConnLimit(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(inner, 3, nil)
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go serve(l, accepted)
	addr := inner.Addr().String()
	local := netip.MustParseAddr("127.0.0.1")

	cs := dialN(t, addr, 3)
	var server []net.Conn
	for i := 0; i < 3; i++ {
		server = append(server, <-accepted)
	}
	if n := l.openFrom(local); n != 3 {
		t.Fatalf("open from 127.0.0.1: %d, want 3", n)
	}
	extra := dialN(t, addr, 1)[0]
	if !closedByPeer(t, extra) {
		t.Fatal("a fourth connection from the same address stayed open")
	}
	select {
	case c := <-accepted:
		t.Fatalf("the fourth connection was handed to the server: %v", c.RemoteAddr())
	default:
	}
	// Closing one (twice: the slot comes back once) lets one more in.
	server[0].Close()
	server[0].Close()
	if n := l.openFrom(local); n != 2 {
		t.Fatalf("open after a close: %d, want 2", n)
	}
	dialN(t, addr, 1)
	<-accepted
	if n := l.openFrom(local); n != 3 {
		t.Fatalf("open after a new connection: %d, want 3", n)
	}
	_ = cs
}

// A trusted proxy carries many clients: its connections are not counted.
func TestConnLimitExemptsTrustedProxies(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(inner, 1, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go serve(l, accepted)
	dialN(t, inner.Addr().String(), 5)
	for i := 0; i < 5; i++ {
		<-accepted
	}
}
