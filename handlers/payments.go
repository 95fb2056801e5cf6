package handlers

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
)

// checkoutBody is the body of a checkout at the payment provider.
type checkoutBody struct {
	Method       string `json:"method"`
	UserCouponID *int64 `json:"user_coupon_id"`
}

// ProviderCheckout opens (or answers again) the trade paying one of the
// caller's orders at the payment provider: POST /api/orders/{id}/checkout.
func (h *Checkout) ProviderCheckout(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in checkoutBody
	if err := bind(c, &in); err != nil {
		return err
	}
	f := db.FieldErrors{}
	if in.Method == "" {
		f["method"] = "is required: card, alipay or wechat_pay"
	}
	coupon := int64(0)
	if in.UserCouponID != nil {
		if *in.UserCouponID <= 0 {
			f["user_coupon_id"] = "must be a positive integer"
		}
		coupon = *in.UserCouponID
	}
	if err := f.Err(); err != nil {
		return err
	}
	co, err := h.Checkout.Checkout(c.UserContext(), cl.UserID, id, in.Method, coupon, c.BaseURL())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"checkout": co})
}

// StripeWebhook takes the payment provider's signed webhook:
// POST /api/payments/stripe → 200 once handled (a bad signature: 400, nothing changed).
func (h *Checkout) StripeWebhook(c *fiber.Ctx) error {
	if err := h.Checkout.AcceptProviderEvent(c.UserContext(), c.Body(), c.Get("Stripe-Signature")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"received": true})
}
