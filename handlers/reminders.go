package handlers

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// reminderBook is what the reminder routes of one kind of sale call: coupon
// templates and seckill goods book reminders alike (db/remind), under
// /api/coupons/{id}/reminders and /api/goods/{id}/reminders.
type reminderBook struct {
	list   func(ctx context.Context, userID, id int64) ([]model.BookedReminder, error)
	book   func(ctx context.Context, userID, id int64, minutes int, channel string) ([]model.BookedReminder, error)
	cancel func(ctx context.Context, userID, id int64, minutes int, channel string) ([]model.BookedReminder, error)
}

func (h *Handlers) couponReminders() reminderBook {
	return reminderBook{h.Coupons.Reminders, h.Coupons.Book, h.Coupons.Cancel}
}

func (h *Handlers) goodsReminders() reminderBook {
	return reminderBook{h.Goods.Reminders, h.Goods.BookReminder, h.Goods.CancelReminder}
}

// CouponReminders lists the caller's reminders for a template: GET /api/coupons/{id}/reminders.
func (h *Handlers) CouponReminders(c *fiber.Ctx) error { return h.couponReminders().listRoute(c) }

// BookReminder books one reminder: PUT /api/coupons/{id}/reminders.
func (h *Handlers) BookReminder(c *fiber.Ctx) error { return h.couponReminders().bookRoute(c) }

// CancelReminder clears one reminder: DELETE /api/coupons/{id}/reminders?minutes_before=&channel=.
func (h *Handlers) CancelReminder(c *fiber.Ctx) error { return h.couponReminders().cancelRoute(c) }

// GoodsReminders lists the caller's reminders for a goods: GET /api/goods/{id}/reminders.
func (h *Handlers) GoodsReminders(c *fiber.Ctx) error { return h.goodsReminders().listRoute(c) }

// BookGoodsReminder books one reminder before a goods' sale: PUT /api/goods/{id}/reminders.
func (h *Handlers) BookGoodsReminder(c *fiber.Ctx) error { return h.goodsReminders().bookRoute(c) }

// CancelGoodsReminder clears one reminder: DELETE /api/goods/{id}/reminders?minutes_before=&channel=.
func (h *Handlers) CancelGoodsReminder(c *fiber.Ctx) error { return h.goodsReminders().cancelRoute(c) }

type reminderBody struct {
	MinutesBefore int    `json:"minutes_before"`
	Channel       string `json:"channel"`
}

func (b reminderBook) listRoute(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	return remindersJSON(c)(b.list(c.UserContext(), cl.UserID, id))
}

func (b reminderBook) bookRoute(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in reminderBody
	if err := bind(c, &in); err != nil {
		return err
	}
	return remindersJSON(c)(b.book(c.UserContext(), cl.UserID, id, in.MinutesBefore, in.Channel))
}

func (b reminderBook) cancelRoute(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	minutes, err := strconv.Atoi(c.Query("minutes_before"))
	if err != nil {
		return db.FieldErrorf("minutes_before", "must be one of 5, 10, … 60")
	}
	return remindersJSON(c)(b.cancel(c.UserContext(), cl.UserID, id, minutes, c.Query("channel")))
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
