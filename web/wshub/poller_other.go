//go:build !linux

package wshub

import "context"

// goroutinePoller reads each socket from its own goroutine where epoll is
// missing: it costs a goroutine per client but behaves the same.
type goroutinePoller struct{ readLoop func(*wsClient) }

type poller interface {
	add(c *wsClient) error
	rearm(c *wsClient) error
	remove(c *wsClient)
	// wait calls onReady for the sockets that have data until ctx ends: the hub's poller loop.
	wait(ctx context.Context)
	// close frees the poller, once its wait has returned.
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

// wait has nothing to wait for: each socket's goroutine reads it.
func (p *goroutinePoller) wait(context.Context) {}
