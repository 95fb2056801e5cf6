//go:build linux

package wshub

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// epoller waits for many sockets in one epoll set, so an idle WebSocket holds
// no goroutine. Each socket is armed one-shot: after a read the hub re-arms it,
// so one client is never read by two readers at once.
type epoller struct {
	fd      int
	onReady func(*wsClient)

	mu   sync.Mutex
	byFD map[int32]*wsClient
	fdOf map[*wsClient]int32
}

type poller interface {
	add(c *wsClient) error
	rearm(c *wsClient) error
	remove(c *wsClient)
	// wait calls onReady for the sockets that have data until ctx ends: the hub's poller loop.
	wait(ctx context.Context)
	// close frees the poller, once its wait has returned.
	close()
}

// newPoller watches sockets with epoll and calls onReady when one has data
// (while its wait runs); readLoop is for platforms without epoll.
func newPoller(onReady, _ func(*wsClient)) (poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	return &epoller{fd: fd, onReady: onReady, byFD: map[int32]*wsClient{}, fdOf: map[*wsClient]int32{}}, nil
}

const armed = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR | unix.EPOLLONESHOT

func socketFD(conn net.Conn) (int32, error) {
	// A *net.TCPConn, or the per-address limit's wrapper around one.
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("websocket over %T is not a socket", conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd int32
	if err := raw.Control(func(f uintptr) { fd = int32(f) }); err != nil {
		return 0, err
	}
	return fd, nil
}

func (p *epoller) add(c *wsClient) error {
	fd, err := socketFD(c.ws.NetConn())
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.byFD[fd], p.fdOf[c] = c, fd
	p.mu.Unlock()
	return unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, int(fd), &unix.EpollEvent{Events: armed, Fd: fd})
}

func (p *epoller) rearm(c *wsClient) error {
	p.mu.Lock()
	fd, ok := p.fdOf[c]
	p.mu.Unlock()
	if !ok {
		return nil // removed meanwhile
	}
	return unix.EpollCtl(p.fd, unix.EPOLL_CTL_MOD, int(fd), &unix.EpollEvent{Events: armed, Fd: fd})
}

// remove takes the socket out of the set; the caller closes it afterwards, so
// its descriptor cannot be reused while still registered.
func (p *epoller) remove(c *wsClient) {
	p.mu.Lock()
	fd, ok := p.fdOf[c]
	if ok {
		delete(p.fdOf, c)
		delete(p.byFD, fd)
	}
	p.mu.Unlock()
	if ok {
		unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, int(fd), nil)
	}
}

func (p *epoller) wait(ctx context.Context) {
	events := make([]unix.EpollEvent, 256)
	for {
		if ctx.Err() != nil {
			return
		}
		n, err := unix.EpollWait(p.fd, events, 200)
		if err != nil && err != unix.EINTR {
			return
		}
		for i := 0; i < n; i++ {
			p.mu.Lock()
			c := p.byFD[events[i].Fd]
			p.mu.Unlock()
			if c != nil {
				p.onReady(c)
			}
		}
	}
}

func (p *epoller) close() {
	unix.Close(p.fd)
}
