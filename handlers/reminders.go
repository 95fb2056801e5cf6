package handlers

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// CouponReminders lists the caller's reminders for a template: GET /api/coupons/{id}/reminders.
func (h *Reminders) CouponReminders(c *fiber.Ctx) error { return h.Coupons.listRoute(c) }

// BookReminder books one reminder: PUT /api/coupons/{id}/reminders.
func (h *Reminders) BookReminder(c *fiber.Ctx) error { return h.Coupons.bookRoute(c) }

// CancelReminder clears one reminder: DELETE /api/coupons/{id}/reminders?minutes_before=&channel=.
func (h *Reminders) CancelReminder(c *fiber.Ctx) error { return h.Coupons.cancelRoute(c) }

// GoodsReminders lists the caller's reminders for a goods: GET /api/goods/{id}/reminders.
func (h *Reminders) GoodsReminders(c *fiber.Ctx) error { return h.Goods.listRoute(c) }

// BookGoodsReminder books one reminder before a goods' sale: PUT /api/goods/{id}/reminders.
func (h *Reminders) BookGoodsReminder(c *fiber.Ctx) error { return h.Goods.bookRoute(c) }

// CancelGoodsReminder clears one reminder: DELETE /api/goods/{id}/reminders?minutes_before=&channel=.
func (h *Reminders) CancelGoodsReminder(c *fiber.Ctx) error { return h.Goods.cancelRoute(c) }

type reminderBody struct {
	MinutesBefore int    `json:"minutes_before"`
	Channel       string `json:"channel"`
}

func (b ReminderBook) listRoute(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	return remindersJSON(c)(b.List(c.UserContext(), cl.UserID, id))
}

func (b ReminderBook) bookRoute(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in reminderBody
	if err := bind(c, &in); err != nil {
		return err
	}
	return remindersJSON(c)(b.Book(c.UserContext(), cl.UserID, id, in.MinutesBefore, in.Channel))
}

func (b ReminderBook) cancelRoute(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	minutes, err := strconv.Atoi(c.Query("minutes_before"))
	if err != nil {
		return db.FieldErrorf("minutes_before", "must be one of 5, 10, … 60")
	}
	return remindersJSON(c)(b.Cancel(c.UserContext(), cl.UserID, id, minutes, c.Query("channel")))
}

// remindersJSON answers {reminders} or the service's error.
func remindersJSON(c *fiber.Ctx) func([]model.BookedReminder, error) error {
	return func(rs []model.BookedReminder, err error) error {
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"reminders": rs})
	}
}
