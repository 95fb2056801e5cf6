package app

import (
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/stripe"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// checkoutArea is paying for an order (with a coupon or none), the payment
// gateway's callback and refunds: it composes goods and coupons.
func (m *Main) checkoutArea(gs *goods.Service, cs *coupon.Service) Area {
	co := &checkout.Service{Backend: m.Backend, Goods: gs, Coupons: cs,
		PaymentSecret: checkout.PaymentKey(m.Config.PaymentSecret, m.secret)}
	if cfg := m.Config; cfg.StripeSecretKey != "" {
		co.Payments = checkout.Payments{Methods: cfg.Methods(), Currency: cfg.PaymentCurrency,
			Provider: stripe.New(stripe.Config{SecretKey: cfg.StripeSecretKey, WebhookSecret: cfg.StripeWebhookSecret, APIBase: cfg.StripeAPIBase})}
	}
	h := &handlers.Checkout{Site: m.Site, Checkout: co}
	return Area{
		Name:    "checkout",
		Service: co,
		Uses:    []string{"goods", "coupons"},
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Post("/orders/:id/pay", r.User, h.CheckoutPay)
				r.Open.Post("/orders/:id/refund", r.User, r.Audit, h.Refund)
				r.Open.Post("/payments/callback", h.PaymentCallback)
				r.Open.Post("/orders/:id/checkout", r.User, h.ProviderCheckout)
				r.Open.Post("/payments/stripe", h.StripeWebhook)
				// the merchant's orders desk
				r.Staff.Get("/orders", h.DeskOrders)
				r.Staff.Get("/orders.csv", h.DeskCSV)
				r.Staff.Get("/orders/:id", h.DeskOrder)
				r.StaffKeyed("/orders/:id/refund", h.DeskRefund)
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/orders/:id/checkout", r.User, h.CheckoutPage)
				r.Open.Post("/orders/:id/pay", r.User, h.PayForm)
				r.Open.Post("/orders/:id/checkout", r.User, h.ProviderCheckoutForm)
				r.Open.Get("/orders/:id/receipt", r.User, h.ReceiptPage)
				// Confirm before a refund (a GET asks, the POST does it).
				r.Open.Get("/orders/:id/refund", r.User, h.RefundConfirmPage)
				r.Open.Post("/orders/:id/refund", r.User, r.Audit, h.RefundForm)
				// the merchant's orders desk: search, an order's history, refund after a confirm page
				r.Staff.Get("/orders", h.DeskPage)
				r.Staff.Get("/orders/:id", h.DeskOrderPage)
				r.Staff.Get("/orders/:id/refund", h.DeskRefundConfirm)
				r.Staff.Post("/orders/:id/refund", h.DeskRefundForm)
			},
		},
		Tasks: []tasks.Area{&tasks.Checkout{Store: co}, &tasks.Payments{Store: co}},
	}
}
