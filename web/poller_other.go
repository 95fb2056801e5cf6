//go:build !linux

package web

// goroutinePoller reads each socket from its own goroutine where epoll is
// missing; it costs a goroutine per client but behaves the same.
type goroutinePoller struct{ onReady func(*wsClient) }

type poller interface {
	add(c *wsClient) error
	rearm(c *wsClient) error
	remove(c *wsClient)
	close()
}

func newPoller(onReady func(*wsClient)) (poller, error) { return &goroutinePoller{onReady}, nil }

func (p *goroutinePoller) add(c *wsClient) error {
	go p.onReady(c)
	return nil
}
func (p *goroutinePoller) rearm(c *wsClient) error { go p.onReady(c); return nil }
func (p *goroutinePoller) remove(*wsClient)        {}
func (p *goroutinePoller) close()                  {}
