package app

import (
	"context"

	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// fairArea is fair sales: the waiting room, raffles, the proof of work and
// pre-registration, in front of the goods' grab (a stage of its engine,
// handed to the goods as they are built: areas).
func (m *Main) fairArea(fs *fair.Service, gs *goods.Service) Area {
	fs.PowKey = outbound.DeriveKey("", m.secret, "seckill proof of work key") // every process signs and checks alike (and seals raffles' seeds)
	fs.Floor = func() int { return m.Switches.Current().PowFloorBits }        // the steering switches' proof-of-work floor
	m.Switches.OnChange(func(model.Switches) { fs.Quiet().Changed() })        // goods that asked no proof may ask the floor's now
	fs.SalePaused = func() bool { return m.Switches.Current().SalePaused }    // and their sale pause (automatic rooms pause too)
	if m.Config.RaffleBeaconURL != "" {
		fs.Beacon = &verify.Beacon{URL: m.Config.RaffleBeaconURL}
	}
	h := &handlers.Fair{Site: m.Site, Fair: fs, Goods: gs}
	return Area{
		Name:    "fair",
		Service: fs,
		Uses:    []string{"goods"},
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Get("/pow", r.User, h.PowChallenge)
				r.Open.Post("/goods/:id/queue", r.Grab, h.JoinQueue)
				r.Open.Get("/goods/:id/queue", r.User, h.QueueTicket)
				r.Open.Get("/goods/:id/queue/room", h.QueueRoom)
				r.Open.Post("/goods/:id/entries", r.Grab, h.EnterRaffle) // the grab rate limit: an entry is a try for the goods
				r.Open.Get("/goods/:id/entries/me", r.User, h.MyRaffleEntry)
				r.Open.Get("/goods/:id/draw", h.RaffleDraw)
				r.Staff.Get("/goods/:id/raffle", h.RaffleStats)
				r.Staff.Get("/goods/:id/queue", h.QueueStats)
				r.Staff.Post("/goods/:id/queue/codes", h.QueueCodes)
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/goods/:id/queue", r.User, h.QueuePage)
				r.Open.Get("/goods/:id/raffle", h.RafflePage)
			},
		},
		Tasks: []tasks.Area{&tasks.Raffle{Store: fs, Log: m.Log}},
		// The waiting rooms' tick advances the rooms and sends the tickets
		// of the sockets this process holds; the proof of work's attack
		// counts go to the shared record once a second.
		Serve: func(ctx context.Context, p Process) (lifecycle.Loops, error) {
			return lifecycle.Loops{
				lifecycle.New("fair queues", func(ctx context.Context) { fs.RunQueues(ctx, p.Sockets) }),
				lifecycle.New("fair pow floor", fs.RunPow),
			}, nil
		},
	}
}
