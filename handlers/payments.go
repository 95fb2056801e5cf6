package handlers

import (
	"context"

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

// ProviderCheckoutForm opens the trade paying one of the caller's orders at
// the payment provider from the checkout page without JavaScript (method,
// coupon: the user coupon's ID, 0 for none) and goes back to the checkout,
// which shows the next step: a link to the provider's page, or WeChat Pay's
// QR code. (The page's form-action policy keeps a form from redirecting to
// another site, so the link is followed by the shopper.) POST /orders/{id}/checkout.
func (h *Checkout) ProviderCheckoutForm(c *fiber.Ctx) error {
	return checkoutForm(c, checkoutPath, func(ctx context.Context, user, id, coupon int64) error {
		_, err := h.Checkout.Checkout(ctx, user, id, c.FormValue("method"), coupon, c.BaseURL())
		return err
	})
}

// StripeWebhook takes the payment provider's signed webhook:
// POST /api/payments/stripe → 200 once handled (a bad signature: 400, nothing changed).
func (h *Checkout) StripeWebhook(c *fiber.Ctx) error {
	if err := h.Checkout.AcceptProviderEvent(c.UserContext(), c.Body(), c.Get("Stripe-Signature")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"received": true})
}
