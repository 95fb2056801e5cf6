package wshub

import "github.com/seckill/seckill/db/live"

// Local delivery, for work that computes users' events in each process for
// the sockets it holds (the waiting rooms' tickets, db/fair/queue_tick.go)
// instead of publishing them through Redis.

// LocalUsers lists the signed-in users with a socket on this process.
func (h *Hub) LocalUsers() []int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := make(map[int64]struct{}, len(h.clients))
	out := make([]int64, 0, len(h.clients))
	for c := range h.clients {
		if c.userID <= 0 {
			continue
		}
		if _, ok := seen[c.userID]; !ok {
			seen[c.userID] = struct{}{}
			out = append(out, c.userID)
		}
	}
	return out
}

// SendLocal sends an event to the user's sockets on this process only.
func (h *Hub) SendLocal(userID int64, event []byte) {
	h.dispatch(live.TopicUser(userID), event)
}
