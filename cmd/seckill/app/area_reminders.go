package app

import (
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/tasks"
	"github.com/seckill/seckill/web"
)

// remindersArea is the reminders a shopper books before a coupon's or a
// goods' sale starts (handlers/reminders.go). The coupons' fan-out tasks
// are the coupons area's; the goods' are here. It has no service of its own.
func (m *Main) remindersArea(gs *goods.Service, cs *coupon.Service) Area {
	h := &handlers.Reminders{Site: m.Site,
		Coupons: handlers.ReminderBook{List: cs.Reminders, Book: cs.Book, Cancel: cs.Cancel, Mine: cs.UserReminders},
		Goods:   handlers.ReminderBook{List: gs.Reminders, Book: gs.BookReminder, Cancel: gs.CancelReminder, Mine: gs.UserReminders}}
	return Area{
		Name: "reminders",
		Routes: web.AreaRoutes{
			API: func(r web.Mount) {
				r.Open.Get("/coupons/:id/reminders", r.User, h.CouponReminders)
				r.Open.Put("/coupons/:id/reminders", r.User, h.BookReminder)
				r.Open.Delete("/coupons/:id/reminders", r.User, h.CancelReminder)
				r.Open.Get("/goods/:id/reminders", r.User, h.GoodsReminders)
				r.Open.Put("/goods/:id/reminders", r.User, h.BookGoodsReminder)
				r.Open.Delete("/goods/:id/reminders", r.User, h.CancelGoodsReminder)
				r.Open.Get("/me/reminders", r.User, h.MyReminders)
			},
			Pages: func(r web.Mount) {
				r.Open.Get("/me/reminders", r.User, h.MyRemindersPage)
			},
		},
		Tasks: []tasks.Area{&tasks.GoodsReminders{Store: gs}},
	}
}
