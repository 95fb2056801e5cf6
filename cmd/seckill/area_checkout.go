package main

import (
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// checkoutArea is paying for an order (with a coupon or none), the payment
// gateway's callback and refunds: it composes goods and coupons.
func (m *Main) checkoutArea() Area {
	h := m.Handlers
	return Area{
		Name:    "checkout",
		Service: m.Checkout,
		Uses:    []string{"goods", "coupons"},
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Post("/orders/:id/pay", r.User, h.CheckoutPay)
				r.Open.Post("/orders/:id/refund", r.User, r.Audit, h.Refund)
				r.Open.Post("/payments/callback", h.PaymentCallback)
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/orders/:id/checkout", r.User, h.CheckoutPage)
				r.Open.Post("/orders/:id/pay", r.User, h.PayForm)
				r.Open.Get("/orders/:id/receipt", r.User, h.ReceiptPage)
				// Confirm before a refund (a GET asks, the POST does it).
				r.Open.Get("/orders/:id/refund", r.User, h.RefundConfirmPage)
				r.Open.Post("/orders/:id/refund", r.User, r.Audit, h.RefundForm)
			},
		},
		Tasks: []tasks.Area{&tasks.Checkout{Store: m.Checkout}},
	}
}
