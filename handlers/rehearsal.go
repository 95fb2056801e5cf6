package handlers

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views"
)

// DeleteSlot removes a rehearsal slot and everything it made: DELETE
// /api/admin/slots/{id} (its merchant's or an admin's; a real slot is
// refused, 409).
func (h *GoodsDesk) DeleteSlot(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	if err := h.Goods.DeleteRehearsal(c.UserContext(), cl, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// AdminDeleteRehearsalForm is the rehearsal slot page's delete form: POST
// /admin/slots/{id}/delete with confirm ticked removes it as DeleteSlot
// does and goes back to the slots; unticked, or refused, it says why on the
// slot's page.
func (h *GoodsDesk) AdminDeleteRehearsalForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	back := "/admin/slots/" + c.Params("id")
	if c.FormValue("confirm") == "" {
		return redirectWithNote(c, back, views.FlashError, views.PlaceRehearsal, "Tick the box to say you mean to delete this rehearsal.")
	}
	if err := h.Goods.DeleteRehearsal(c.UserContext(), cl, id); err != nil {
		if db.ErrorCode(err) == db.ECONFLICT {
			return redirectWithNote(c, back, views.FlashError, views.PlaceRehearsal, db.ErrorMessage(err))
		}
		return err
	}
	return redirectWithFlash(c, "/admin/slots", "The rehearsal was deleted with everything it made; the coupons spent on it were given back.")
}
