package handlers

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/views"
)

// homeSlots is how many of the live and upcoming slots the front page shows
// (soonest first); the rest are a click away on /slots.
const homeSlots = 3

// Home shows the shopper's start page: GET /. The goods of the first slots
// come from the same list functions as the slot page, one call per slot.
func (h *Site) Home(c *fiber.Ctx) error {
	ctx := c.UserContext()
	cl, loggedIn := ClaimsOf(c)
	slots, err := h.Shelves.Goods.Slots(ctx)
	if err != nil {
		return err
	}
	var v views.HomeView
	for _, sl := range slots[:min(len(slots), homeSlots)] {
		gs, err := h.Shelves.Goods.ShopperSlotGoods(ctx, cl, sl.ID)
		if err != nil {
			return err
		}
		if len(gs) > 0 {
			v.Sales = append(v.Sales, views.HomeSlot{Slot: sl, Goods: gs})
		}
	}
	if loggedIn && len(v.Sales) > 0 {
		orders, err := h.Shelves.Goods.MyOrders(ctx, cl.UserID)
		if err != nil {
			return err
		}
		v.Held = views.HeldByGoods(orders)
	}
	packets, err := h.Shelves.RedPackets.Active(ctx)
	if err != nil {
		return err
	}
	v.RedPackets = redPacketCards(packets)
	if v.Coupons, err = h.Shelves.Coupons.List(ctx); err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.HomePage(h.page(c, "Flash sales"), v))
}

// AdminDashboard (handlers/merchant.go) shows the merchant area's start page.

// ErrorPage renders a friendly HTML error page; web's error handler calls it.
func (h *Site) ErrorPage(c *fiber.Ctx, status int, message string) error {
	return render(c, status, views.ErrorPage(h.page(c, "Something went wrong"), status, message))
}
