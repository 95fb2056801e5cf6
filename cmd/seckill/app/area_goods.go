package app

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
	desk := &handlers.GoodsDesk{Site: m.Site, Goods: gs}
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
				r.Staff.Get("/slots", desk.AdminListSlots)
				r.Staff.Post("/slots", desk.CreateSlot)
				r.Staff.Put("/slots/:id", desk.UpdateSlot)
				r.Staff.Delete("/slots/:id", desk.DeleteSlot) // a rehearsal only (handlers/rehearsal.go)
				r.Staff.Post("/goods", desk.CreateGoods)
				r.Staff.Put("/goods/:id", desk.UpdateGoods)
				r.Staff.Get("/goods/:id/stats", desk.GoodsStats)
				// merchant: end, samples, pictures, totals (handlers/merchant.go)
				r.Staff.Post("/goods/:id/end", desk.EndGoods)
				r.Staff.Post("/slots/:id/end", desk.EndSlot)
				r.Staff.Get("/goods/:id/samples", desk.GoodsSamples)
				r.Staff.Get("/slots/:id/samples", desk.SlotSamples)
				r.Staff.Get("/slots/:id/stats", desk.SlotStats)
				r.Staff.Post("/goods/:id/image", desk.UploadGoodsImage)
				r.Staff.Get("/goods/:id/orders.csv", desk.OrdersCSV)
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
				r.Staff.Get("/slots", desk.AdminSlotsPage)
				r.Staff.Post("/slots", desk.AdminCreateSlot)
				r.Staff.Get("/slots/:id", desk.AdminSlotPage)
				r.Staff.Post("/slots/:id", desk.AdminUpdateSlot)
				r.Staff.Post("/slots/:id/goods", desk.AdminCreateGoods)
				r.Staff.Get("/goods/:id", desk.AdminGoodsPage)
				r.Staff.Post("/goods/:id", desk.AdminUpdateGoods)
				// Confirm before ending (a GET asks, the POST does it).
				r.Staff.Get("/goods/:id/end", desk.AdminEndGoodsConfirm)
				r.Staff.Post("/goods/:id/end", desk.AdminEndGoodsForm)
				r.Staff.Post("/goods/:id/hidden", desk.AdminHideGoodsForm)
				r.Staff.Post("/goods/:id/image", desk.AdminImageForm)
				r.Staff.Get("/slots/:id/end", desk.AdminEndSlotConfirm)
				r.Staff.Post("/slots/:id/end", desk.AdminEndSlotForm)
				r.Staff.Post("/slots/:id/hidden", desk.AdminHideSlotForm)
				r.Staff.Post("/slots/:id/delete", desk.AdminDeleteRehearsalForm) // a rehearsal only, its merchant's or an admin's
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
