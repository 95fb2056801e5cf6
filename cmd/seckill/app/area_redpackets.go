package app

import (
	"github.com/seckill/seckill/db/redpacket"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// redPacketsArea is the red packets: a merchant's pot split among the first grabbers.
func (m *Main) redPacketsArea(rs *redpacket.Service) Area {
	h := &handlers.RedPackets{Site: m.Site, RedPackets: rs}
	return Area{
		Name:    "redpackets",
		Service: rs,
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Get("/redpackets", h.ListRedPackets)
				r.Open.Get("/redpackets/:id", h.GetRedPacket)
				r.Open.Post("/redpackets/:id/grab", r.Sale, r.Grab, h.GrabRedPacket)
				r.Open.Get("/redpackets/:id/grabs", h.RedPacketGrabs)
				r.Staff.Post("/redpackets", h.CreateRedPacket)
				r.Staff.Get("/redpackets", h.AdminListRedPackets)
				r.Staff.Get("/redpackets/:id/stats", h.RedPacketStats)
				r.Staff.Get("/redpackets/:id/grabs.csv", h.RedPacketGrabsCSV)
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/redpackets", h.RedPacketsPage)
				r.Open.Get("/redpackets/:id", h.RedPacketPage)
				r.Staff.Get("/redpackets", h.AdminRedPacketsPage)
				r.Staff.Post("/redpackets", h.AdminCreateRedPacketForm)
				r.Staff.Get("/redpackets/:id", h.AdminRedPacketPage)
				r.Staff.Get("/redpackets/:id/grabs", h.RedPacketGrabsPage)
			},
		},
		Tasks: []tasks.Area{&tasks.RedPackets{Store: rs}},
		Flush: rs.FlushClaims,
		Seed:  rs,
	}
}
