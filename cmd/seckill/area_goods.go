package main

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// goodsArea is the flash sale of goods: slots, goods, orders that expire unpaid.
func (m *Main) goodsArea(gs *goods.Service) Area {
	h := &handlers.Goods{Site: m.Site, Goods: gs}
	return Area{
		Name:    "goods",
		Service: gs,
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Get("/slots", h.ListSlots)
				r.Open.Get("/slots/:id/goods", h.SlotGoods)
				r.Open.Get("/goods/:id", h.GetGoods)
				r.Open.Post("/goods/:id/grab", r.Sale, r.Grab, h.Grab)
				r.Open.Get("/orders/:id", r.User, h.GetOrder)
				r.Open.Post("/orders/:id/cancel", r.User, h.CancelOrder)
				r.Open.Get("/me/orders", r.User, h.MyOrders)
				r.Staff.Get("/slots", h.AdminListSlots)
				r.Staff.Post("/slots", h.CreateSlot)
				r.Staff.Put("/slots/:id", h.UpdateSlot)
				r.Staff.Delete("/slots/:id", h.DeleteSlot) // a rehearsal only (handlers/rehearsal.go)
				r.Staff.Post("/goods", h.CreateGoods)
				r.Staff.Put("/goods/:id", h.UpdateGoods)
				r.Staff.Get("/goods/:id/stats", h.GoodsStats)
				// merchant: end, samples, pictures, totals (handlers/merchant.go)
				r.Staff.Post("/goods/:id/end", h.EndGoods)
				r.Staff.Post("/slots/:id/end", h.EndSlot)
				r.Staff.Get("/goods/:id/samples", h.GoodsSamples)
				r.Staff.Get("/slots/:id/samples", h.SlotSamples)
				r.Staff.Get("/slots/:id/stats", h.SlotStats)
				r.Staff.Post("/goods/:id/image", h.UploadGoodsImage)
				r.Staff.Get("/goods/:id/orders.csv", h.OrdersCSV)
			},
			Files: func(r fiber.Router) {
				r.Get(goods.ImagePath+":hash", h.Image) // product pictures, public and content-addressed
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/slots", h.SlotsPage)
				r.Open.Get("/slots/:id", h.SlotsPage)
				r.Open.Get("/goods/:id", h.GoodsPage)
				r.Open.Get("/me/orders", r.User, h.MyOrdersPage)
				r.Open.Get("/orders/:id/cancel", r.User, h.CancelConfirmPage)
				r.Open.Post("/orders/:id/cancel", r.User, h.CancelForm)
				r.Staff.Get("/slots", h.AdminSlotsPage)
				r.Staff.Post("/slots", h.AdminCreateSlot)
				r.Staff.Get("/slots/:id", h.AdminSlotPage)
				r.Staff.Post("/slots/:id", h.AdminUpdateSlot)
				r.Staff.Post("/slots/:id/goods", h.AdminCreateGoods)
				r.Staff.Get("/goods/:id", h.AdminGoodsPage)
				r.Staff.Post("/goods/:id", h.AdminUpdateGoods)
				// Confirm before ending (a GET asks, the POST does it).
				r.Staff.Get("/goods/:id/end", h.AdminEndGoodsConfirm)
				r.Staff.Post("/goods/:id/end", h.AdminEndGoodsForm)
				r.Staff.Post("/goods/:id/hidden", h.AdminHideGoodsForm)
				r.Staff.Post("/goods/:id/image", h.AdminImageForm)
				r.Staff.Get("/slots/:id/end", h.AdminEndSlotConfirm)
				r.Staff.Post("/slots/:id/end", h.AdminEndSlotForm)
				r.Staff.Post("/slots/:id/hidden", h.AdminHideSlotForm)
				r.Staff.Post("/slots/:id/delete", h.AdminDeleteRehearsalForm) // a rehearsal only, its merchant's or an admin's
			},
		},
		Tasks: []tasks.Area{&tasks.Goods{Store: gs, Log: m.Log}},
		Flush: gs.FlushOrders,
		AfterFlush: func(ctx context.Context) error {
			if !m.Switches.Current().LiveCharts { // an admin turned the live charts off (steering switches)
				return nil
			}
			return gs.SampleActive(ctx)
		},
		Seed: gs,
		Serve: func(ctx context.Context, p Process) (lifecycle.Loops, error) {
			// What shoppers read (slots, goods, stock) is served from
			// memory, kept current by the live events (db/goods Catalog).
			if err := gs.Catalog().Load(ctx); err != nil {
				return nil, err
			}
			// Grabs refused for a sale this process knows is closed to them
			// are answered from memory; it follows the changes that reopen
			// one (subscribed last: nothing can fail after it).
			memo, err := gs.FollowSales(ctx)
			if err != nil {
				return nil, err
			}
			return lifecycle.Loops{
				gs.Catalog().Loop(),
				memo,
				// Orders this process acknowledged and a Redis node then lost
				// (no WAIT) are found and told to their shoppers.
				lifecycle.New("phantom watch", func(ctx context.Context) { gs.WatchPhantoms(ctx, p.Failovers) }),
			}, nil
		},
	}
}
