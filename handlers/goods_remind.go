package handlers

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// GoodsReminders lists the caller's reminders for a goods: GET /api/goods/{id}/reminders.
func (h *Handlers) GoodsReminders(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	rs, err := h.Goods.Reminders(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"reminders": rs})
}

// BookGoodsReminder books one reminder before a goods' sale: PUT /api/goods/{id}/reminders.
func (h *Handlers) BookGoodsReminder(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	var in reminderBody
	if err := bind(c, &in); err != nil {
		return err
	}
	rs, err := h.Goods.BookReminder(c.UserContext(), cl.UserID, id, in.MinutesBefore, in.Channel)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"reminders": rs})
}

// CancelGoodsReminder clears one reminder: DELETE /api/goods/{id}/reminders?minutes_before=&channel=.
func (h *Handlers) CancelGoodsReminder(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	minutes, err := strconv.Atoi(c.Query("minutes_before"))
	if err != nil {
		return db.FieldErrorf("minutes_before", "must be one of 5, 10, … 60")
	}
	rs, err := h.Goods.CancelReminder(c.UserContext(), cl.UserID, id, minutes, c.Query("channel"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"reminders": rs})
}

// userReminders lists every reminder the user booked, coupons' and goods', soonest first.
func (h *Handlers) userReminders(ctx context.Context, userID int64) ([]model.BookedReminder, error) {
	cs, err := h.Coupons.UserReminders(ctx, userID)
	if err != nil {
		return nil, err
	}
	gs, err := h.Goods.UserReminders(ctx, userID)
	if err != nil {
		return nil, err
	}
	return model.MergeReminders(cs, gs), nil
}
