package web

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
)

// connLimitListener caps how many connections one client address may hold
// open: a connection over the cap is closed as soon as it is accepted, before
// it costs a goroutine or a buffer. Peers in trusted (proxies) are exempt, as
// one proxy carries many clients.
type connLimitListener struct {
	net.Listener
	max     int
	trusted []netip.Prefix

	mu   sync.Mutex
	open map[netip.Addr]int
}

func newConnLimitListener(ln net.Listener, max int, trusted []netip.Prefix) *connLimitListener {
	return &connLimitListener{Listener: ln, max: max, trusted: trusted, open: map[netip.Addr]int{}}
}

// Accept returns the next connection whose address is under the cap.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := peerAddr(c.RemoteAddr())
		if !ip.IsValid() || inPrefixes(ip, l.trusted) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// openFrom returns how many connections ip holds open.
func (l *connLimitListener) openFrom(ip netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[ip]
}

func (l *connLimitListener) release(ip netip.Addr) {
	l.mu.Lock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
	l.mu.Unlock()
}

func peerAddr(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// limitedConn gives its address's slot back when closed, once.
type limitedConn struct {
	net.Conn
	l    *connLimitListener
	ip   netip.Addr
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}

// SyscallConn exposes the socket, which the live hub's poller watches.
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("not a socket")
}
