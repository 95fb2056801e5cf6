package handlers

import "github.com/gofiber/fiber/v2"

// DeleteSlot removes a rehearsal slot and everything it made: DELETE
// /api/admin/slots/{id} (an admin's; a real slot is refused, 409).
func (h *Goods) DeleteSlot(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	if err := h.Goods.DeleteRehearsal(c.UserContext(), cl, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
