package handlers

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
)

// NaiveGrab is the bench's baseline grab, a SQLite transaction per request:
// POST /api/bench/naive/{id}/grab (mounted only by the load bench).
func (h *Handlers) NaiveGrab(naive *db.NaiveBaseline) fiber.Handler {
	return func(c *fiber.Ctx) error {
		cl, err := caller(c)
		if err != nil {
			return err
		}
		id, err := paramID(c, "id")
		if err != nil {
			return err
		}
		orderID, err := naive.Grab(c.UserContext(), cl.UserID, id)
		if err != nil {
			return err
		}
		return c.Status(fiber.StatusCreated).JSON(fiber.Map{"order": fiber.Map{"id": orderID, "goods_id": id, "user_id": cl.UserID}})
	}
}
