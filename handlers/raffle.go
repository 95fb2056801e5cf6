package handlers

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// EnterRaffle enters the caller in a raffle goods' draw: POST
// /api/goods/{id}/entries (X-Pow when the goods asks a proof of work).
// 201 with a new entry, 200 with the one the caller had.
func (h *Fair) EnterRaffle(c *fiber.Ctx) error {
	return joinByID(c, "entry", h.Fair.EnterRaffle)
}

// MyRaffleEntry answers the caller's entry in a raffle: GET /api/goods/{id}/entries/me.
func (h *Fair) MyRaffleEntry(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	e, err := h.Fair.RaffleEntry(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"entry": e})
}

// RaffleDraw answers a raffle's public record: GET /api/goods/{id}/draw.
func (h *Fair) RaffleDraw(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	d, err := h.Fair.RaffleDraw(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// RaffleStats answers the merchant's live view of a raffle: GET /api/admin/goods/{id}/raffle.
func (h *Fair) RaffleStats(c *fiber.Ctx) error {
	return answerByID[*model.RaffleStats](c, "raffle", h.Fair.RaffleStats)
}

// RafflePage is a raffle goods' page for shoppers: GET /goods/{id}/raffle.
func (h *Fair) RafflePage(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	d, err := h.Fair.RaffleDraw(ctx, id)
	if err != nil {
		return err
	}
	viewer, _ := ClaimsOf(c)
	g, err := h.Goods.ShopperGoods(ctx, viewer, id)
	if err != nil {
		return err
	}
	v := views.RaffleView{Goods: *g, Draw: *d, Now: h.Fair.Now(), Origin: c.BaseURL()}
	if d.Status == model.DrawDrawn && g.State == model.SlotLive {
		if v.Leftovers, err = h.Fair.LeftoversOnSale(ctx, id); err != nil {
			return err
		}
	}
	if cl, ok := ClaimsOf(c); ok {
		e, err := h.Fair.RaffleEntry(ctx, cl.UserID, id)
		if err != nil && db.ErrorCode(err) != db.ENOTFOUND {
			return err
		}
		v.Entry = e
		if e != nil && e.State == model.EntryLost && e.OrderID != 0 { // won, then the order ended unpaid
			if o, err := h.Goods.OrderOf(ctx, e.OrderID); err == nil && o.UserID == cl.UserID {
				v.OrderStatus = o.Status
			} else if err != nil && db.ErrorCode(err) != db.ENOTFOUND {
				return err
			}
		}
	}
	return render(c, fiber.StatusOK, views.RafflePage(h.page(c, "Raffle: "+g.Title), v))
}
