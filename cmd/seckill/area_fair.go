package main

import (
	"context"

	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// fairArea is fair sales: the waiting room, raffles, the proof of work and
// pre-registration, in front of the goods' grab (its Gate).
func (m *Main) fairArea() Area {
	h := m.Handlers
	return Area{
		Name:    "fair",
		Service: m.Fair,
		Uses:    []string{"goods"},
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Get("/pow", h.PowChallenge)
				r.Open.Post("/goods/:id/queue", r.Grab, h.JoinQueue)
				r.Open.Get("/goods/:id/queue", r.User, h.QueueTicket)
				r.Open.Post("/goods/:id/entries", r.Grab, h.EnterRaffle) // the grab rate limit: an entry is a try for the goods
				r.Open.Get("/goods/:id/entries/me", r.User, h.MyRaffleEntry)
				r.Open.Get("/goods/:id/draw", h.RaffleDraw)
				r.Staff.Get("/goods/:id/raffle", h.RaffleStats)
				r.Staff.Get("/goods/:id/queue", h.QueueStats)
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/goods/:id/queue", r.User, h.QueuePage)
				r.Open.Get("/goods/:id/raffle", h.RafflePage)
			},
		},
		Tasks: []tasks.Area{&tasks.Raffle{Store: m.Fair, Log: m.Log}},
		// The waiting rooms' tick advances the rooms and sends the tickets
		// of the sockets this process holds.
		Serve: func(ctx context.Context, p Process) (func(), error) {
			return loop(func(ctx context.Context) { m.Fair.RunQueues(ctx, p.Sockets) }), nil
		},
	}
}
