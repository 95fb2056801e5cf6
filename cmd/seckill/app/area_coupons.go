package app

import (
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// couponsArea is the coupons: templates grabbed in a window, used at checkout.
func (m *Main) couponsArea(cs *coupon.Service) Area {
	h := &handlers.Coupons{Site: m.Site, Coupons: cs}
	return Area{
		Name:    "coupons",
		Service: cs,
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Staff.Post("/coupons", h.CreateCoupon)
				r.Staff.Get("/coupons", h.AdminCoupons)
				r.Staff.Put("/coupons/:id", h.UpdateCoupon)
				r.Staff.Get("/coupons/:id/stats", h.CouponStats)
				r.Staff.Get("/coupons/:id/claims.csv", h.CouponClaimsCSV)
				r.Open.Get("/coupons", h.ListCoupons)
				r.Open.Get("/coupons/:id", h.GetCoupon)
				r.Open.Post("/coupons/:id/grab", r.Sale, r.Grab, h.GrabCoupon)
				r.Open.Get("/me/coupons", r.User, h.MyCoupons)
			},
			Pages: func(r web.Mount) {
				r.Staff.Get("/coupons", h.AdminCouponsPage)
				r.Staff.Post("/coupons", h.AdminCreateCouponForm)
				r.Staff.Get("/coupons/:id", h.AdminCouponPage)
				r.Staff.Post("/coupons/:id", h.AdminCouponWindowForm)
				r.Staff.Get("/coupons/:id/claims", h.CouponClaimsPage)
				r.Open.Get("/coupons", h.CouponsPage)
				r.Open.Get("/me/coupons", r.User, h.MyCouponsPage)
			},
		},
		Tasks: []tasks.Area{&tasks.Coupons{Store: cs}},
		Flush: cs.FlushGrabs,
		Seed:  cs,
	}
}
