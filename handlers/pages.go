package handlers

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/views"
)

// Home shows the shopper's start page.
func (h *Handlers) Home(c *fiber.Ctx) error {
	return render(c, fiber.StatusOK, views.HomePage(h.page(c, "Flash sales")))
}

// AdminDashboard (handlers/merchant.go) shows the merchant area's start page.

// ErrorPage renders a friendly HTML error page; web's error handler calls it.
func (h *Handlers) ErrorPage(c *fiber.Ctx, status int, message string) error {
	return render(c, status, views.ErrorPage(h.page(c, "Something went wrong"), status, message))
}
