package web

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/static"
)

// favicon answers /favicon.ico, which browsers ask for whatever the page
// links, from the embedded static/favicon.ico.
func favicon(c *fiber.Ctx) error {
	b, err := static.Files.ReadFile("favicon.ico")
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	c.Set(fiber.HeaderContentType, "image/x-icon")
	return c.Send(b)
}
