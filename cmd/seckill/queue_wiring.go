package main

import "context"

// startQueues runs the waiting rooms' tick (db/goods/queue_tick.go) in a web
// process: it advances the rooms and sends the tickets of the sockets this
// process holds.
func (m *Main) startQueues() {
	var ctx context.Context
	ctx, m.stopQueues = context.WithCancel(context.Background())
	m.queuesDone = make(chan struct{})
	go func() { defer close(m.queuesDone); m.Goods.RunQueues(ctx, m.Web.Hub) }()
}

// stopQueueTick ends the tick and waits for it.
func (m *Main) stopQueueTick() {
	if m.stopQueues != nil {
		m.stopQueues()
		<-m.queuesDone
	}
}
