package handlers

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views"
)

// Waiting rooms (goods in mode queue, db/fair/queue.go).

// JoinQueue puts the caller in the goods' waiting room: POST
// /api/goods/{id}/queue answers 201 with the new ticket, 200 with the one
// held already. A body {code} admits the caller at once with a priority
// code (queue_room.go).
func (h *Fair) JoinQueue(c *fiber.Ctx) error {
	if code, ok, err := priorityCode(c); err != nil || ok {
		if err != nil {
			return err
		}
		return h.joinQueueCode(c, code)
	}
	return joinByID(c, "ticket", h.Fair.JoinQueue)
}

// QueueTicket answers the caller's ticket: GET /api/goods/{id}/queue.
func (h *Fair) QueueTicket(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	t, err := h.Fair.QueueTicket(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"ticket": t})
}

// QueueStats answers the merchant's view of a waiting room: GET /api/admin/goods/{id}/queue.
func (h *Fair) QueueStats(c *fiber.Ctx) error {
	return answerByID(c, "queue", h.Fair.QueueStats)
}

// QueuePage is a goods' waiting room for the signed-in shopper: GET /goods/{id}/queue.
func (h *Fair) QueuePage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	g, err := h.Goods.ShopperGoods(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	v := views.QueueView{Goods: *g}
	if t, err := h.Fair.QueueTicket(c.UserContext(), cl.UserID, id); err == nil {
		v.Ticket = t
	} else if db.ErrorCode(err) != db.ENOTFOUND {
		return err
	}
	if v.Orders, err = ordersOn(c.UserContext(), h.Goods, cl.UserID, id); err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.QueuePage(h.page(c, "Waiting room: "+g.Title), v))
}
