//go:build !linux

package wshub

// goroutinePoller reads each socket from its own goroutine where epoll is
// missing: it costs a goroutine per client but behaves the same.
type goroutinePoller struct{ readLoop func(*wsClient) }

type poller interface {
	add(c *wsClient) error
	rearm(c *wsClient) error
	remove(c *wsClient)
	close()
}

func newPoller(_, readLoop func(*wsClient)) (poller, error) { return &goroutinePoller{readLoop}, nil }

func (p *goroutinePoller) add(c *wsClient) error {
	go p.readLoop(c)
	return nil
}
func (p *goroutinePoller) rearm(*wsClient) error { return nil }
func (p *goroutinePoller) remove(*wsClient)      {}
func (p *goroutinePoller) close()                {}
