package handlers

import (
	"github.com/gofiber/fiber/v2"
)

// QueueRoom answers a waiting room's public commitment, to anyone: GET
// /api/goods/{id}/queue/room → {goods_id, seed_hash, joined, started, seed?}.
func (h *Fair) QueueRoom(c *fiber.Ctx) error {
	id, err := paramID(c, "id")
	if err != nil {
		return err
	}
	room, err := h.Fair.QueueRoom(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(room)
}
