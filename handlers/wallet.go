package handlers

import (
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/views"
)

// WalletPage is "My wallet": the caller's red packet winnings with their
// total, and the coupons they claimed: GET /me/wallet.
func (h *Site) WalletPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	var v views.WalletView
	if v.Winnings, err = h.Shelves.RedPackets.Winnings(c.UserContext(), cl.UserID); err != nil {
		return err
	}
	if v.Coupons, err = h.Shelves.Coupons.UserCoupons(c.UserContext(), cl.UserID); err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.WalletPage(h.page(c, "My wallet"), v))
}
