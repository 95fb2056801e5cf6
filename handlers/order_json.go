package handlers

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db/model"
)

// sendOrder answers {"order": o} with status as c.JSON(fiber.Map{"order": o})
// would, byte for byte, but from the order's own encoder: encoding/json would
// walk the map by reflection and check the order's JSON again, on every
// winning grab.
func sendOrder(c *fiber.Ctx, status int, o *model.Order) error {
	body, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	return sendOrderJSON(c, status, body)
}

// sendOrderJSON is sendOrder from the order's JSON, as o.MarshalJSON gives
// it (a grab's service call encoded it once, for its live event too).
func sendOrderJSON(c *fiber.Ctx, status int, order []byte) error {
	c.Status(status).Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	w := c.Response()
	w.ResetBody()
	w.AppendBodyString(`{"order":`)
	w.AppendBody(order)
	w.AppendBodyString("}")
	return nil
}
