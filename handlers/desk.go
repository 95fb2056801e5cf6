package handlers

import (
	"context"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// The merchant orders desk: the API under /api/admin/orders and the pages
// under /admin/orders.

// shopZone is the shop's time zone, in which the desk reads its date
// filters and the exports write their times: the server's local zone (TZ).
func shopZone() *time.Location { return time.Local }

// deskFilter reads the desk's query: q, goods_id, slot_id, status, from
// and to (dates, YYYY-MM-DD in the shop's zone, to inclusive), before, limit.
func (h *Checkout) deskFilter(c *fiber.Ctx) (checkout.DeskFilter, error) {
	f := checkout.DeskFilter{Q: c.Query("q"), Status: c.Query("status"), Before: c.Query("before")}
	var err error
	if f.GoodsID, err = queryInt(c, "goods_id"); err != nil {
		return f, err
	}
	if f.SlotID, err = queryInt(c, "slot_id"); err != nil {
		return f, err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return f, err
	}
	f.Limit = int(limit)
	for _, d := range []struct {
		name string
		to   *time.Time
		next bool
	}{{"from", &f.From, false}, {"to", &f.To, true}} {
		s := c.Query(d.name)
		if s == "" {
			continue
		}
		day, err := time.ParseInLocation(time.DateOnly, s, shopZone())
		if err != nil {
			return f, db.FieldErrorf(d.name, "must be a date, YYYY-MM-DD")
		}
		if d.next { // the whole of the last day
			day = day.AddDate(0, 0, 1)
		}
		*d.to = day
	}
	return f, nil
}

// DeskOrders lists the orders of the caller's goods, searched and filtered, newest first:
// GET /api/admin/orders?q=&goods_id=&slot_id=&status=&from=&to=&before=&limit=.
func (h *Checkout) DeskOrders(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	f, err := h.deskFilter(c)
	if err != nil {
		return err
	}
	page, err := h.Checkout.DeskOrders(c.UserContext(), cl, f)
	if err != nil {
		return err
	}
	return c.JSON(page)
}

// DeskOrder answers one order of the caller's goods with its history: GET /api/admin/orders/{id}.
func (h *Checkout) DeskOrder(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	v, err := h.Checkout.DeskOrder(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

type refundBody struct {
	Reason string `json:"reason"`
}

// DeskRefund refunds a paid order of the caller's goods, with a reason:
// POST /api/admin/orders/{id}/refund {reason}. The audit middleware records
// it (order.refund on order:ID) with the reason; a retry answered from its
// Idempotency-Key changed nothing and is not recorded again.
func (h *Checkout) DeskRefund(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in refundBody
	if err := bind(c, &in); err != nil {
		return err
	}
	ctx, err := opContext(c)
	if err != nil {
		return err
	}
	o, replayed, err := h.Checkout.DeskRefund(ctx, cl, id, in.Reason)
	if replayed {
		setReplayed(c)
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"order": o})
}

// DeskPage is the orders desk: GET /admin/orders with the API's query.
func (h *Checkout) DeskPage(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	f, err := h.deskFilter(c)
	if err != nil {
		return err
	}
	page, err := h.Checkout.DeskOrders(c.UserContext(), cl, f)
	if err != nil {
		return err
	}
	choices, err := h.Checkout.DeskChoices(c.UserContext(), cl)
	if err != nil {
		return err
	}
	v := views.DeskView{Q: f.Q, GoodsID: f.GoodsID, SlotID: f.SlotID, Status: f.Status, From: c.Query("from"), To: c.Query("to"),
		Statuses: model.OrderStatuses, NextBefore: page.NextBefore, Paged: f.Before != ""}
	for _, o := range page.Orders {
		v.Orders = append(v.Orders, deskRow(o))
	}
	seen := map[int64]bool{}
	for _, ch := range choices {
		v.Goods = append(v.Goods, views.DeskChoice{ID: ch.GoodsID, Title: ch.GoodsTitle})
		if !seen[ch.SlotID] {
			seen[ch.SlotID] = true
			v.Slots = append(v.Slots, views.DeskChoice{ID: ch.SlotID, Title: ch.SlotTitle})
		}
	}
	return render(c, fiber.StatusOK, views.DeskPage(h.page(c, "Orders"), v))
}

func deskRow(o model.DeskOrder) views.DeskOrder {
	return views.DeskOrder{ID: o.ID, Number: o.Number, GoodsID: o.GoodsID, GoodsTitle: o.GoodsTitle, UserID: o.UserID,
		Username: o.Username, Status: o.Status, Failure: o.Failure, AmountCents: o.AmountCents, DiscountCents: o.DiscountCents,
		PaidCents: o.PaidCents, UserCouponID: o.UserCouponID, CreatedAt: o.CreatedAt, PaidAt: o.PaidAt, RefundedAt: o.RefundedAt}
}

// deskOrderView reads one order with its history for the order page.
func (h *Checkout) deskOrderView(c *fiber.Ctx) (views.DeskOrderView, error) {
	cl, id, err := callerAndID(c)
	if err != nil {
		return views.DeskOrderView{}, err
	}
	ov, err := h.Checkout.DeskOrder(c.UserContext(), cl, id)
	if err != nil {
		return views.DeskOrderView{}, err
	}
	v := views.DeskOrderView{Order: deskRow(ov.Order), ReasonMax: checkout.RefundReasonMax}
	for _, s := range ov.History {
		step := views.DeskStep{At: s.At, Status: s.Status, Actor: s.Actor, ActorName: s.ActorName, Detail: s.Detail}
		if s.Status == model.OrderPaid && ov.Order.UserCouponID > 0 {
			step.DiscountCents = ov.Order.DiscountCents
			if cp, err := h.Checkout.Coupons.Get(c.UserContext(), coupon.TemplateOf(ov.Order.UserCouponID)); err == nil {
				step.CouponTitle = cp.Title
			} else if db.ErrorCode(err) != db.ENOTFOUND {
				return views.DeskOrderView{}, err
			}
		}
		v.History = append(v.History, step)
	}
	return v, nil
}

// DeskOrderPage is one order with its history and, when paid, the way to
// refund it: GET /admin/orders/{id}; ?done=refunded after a refund made
// from the form says so beside it.
func (h *Checkout) DeskOrderPage(c *fiber.Ctx) error {
	v, err := h.deskOrderView(c)
	if err != nil {
		return err
	}
	if c.Query("done") == "refunded" && v.Order.Status == model.OrderRefunded {
		v.Done = "Refunded #" + v.Order.Number + ": " + views.Money(v.Order.PaidCents) + " back to " + v.Order.Username + "."
	}
	return render(c, fiber.StatusOK, views.DeskOrderPage(h.page(c, v.Order.Number), v))
}

// DeskRefundConfirm asks before a refund, with the reason to give:
// GET /admin/orders/{id}/refund (no script needed).
func (h *Checkout) DeskRefundConfirm(c *fiber.Ctx) error {
	v, err := h.deskOrderView(c)
	if err != nil {
		return err
	}
	v.Confirm = true
	return render(c, fiber.StatusOK, views.DeskOrderPage(h.page(c, "Refund "+v.Order.Number), v))
}

// DeskRefundForm refunds from the confirm form: POST /admin/orders/{id}/refund.
// A refund made goes to the order's page, which says so beside the refund
// (and, read after this request, shows the audited reason in the history);
// a refused one answers 4xx (so the audit records only refunds made) with
// the form and its error beside it.
func (h *Checkout) DeskRefundForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	reason := c.FormValue("reason")
	_, _, rerr := h.Checkout.DeskRefund(c.UserContext(), cl, id, reason)
	if rerr == nil {
		return c.Redirect("/admin/orders/"+strconv.FormatInt(id, 10)+"?done=refunded", fiber.StatusSeeOther)
	}
	status, shown := refusal(rerr)
	if !shown {
		return rerr
	}
	v, err := h.deskOrderView(c)
	if err != nil {
		return err
	}
	v.Confirm, v.Reason, v.Error = true, reason, refundErrorText(rerr)
	return render(c, status, views.DeskOrderPage(h.page(c, "Refund "+v.Order.Number), v))
}

// refundErrorText is what the refund form says when a refund is refused.
func refundErrorText(err error) string {
	if msg, ok := db.FieldsOf(err)["reason"]; ok {
		return "The reason " + msg + "."
	}
	return db.ErrorMessage(err)
}

// DeskCSVColumns are the columns of the desk's export.
var DeskCSVColumns = []string{"number", "order_id", "goods_id", "goods_title", "username", "user_id", "status",
	"amount", "discount", "paid", "created_at", "paid_at", "refunded_at", "refunded_by", "refund_reason"}

// DeskCSV exports every order the desk's filters show (its query, paging
// aside), newest first: GET /api/admin/orders.csv. It is written for its
// reader (ordersCSV), or with format=machine as a program reads it: times
// RFC 3339 with the offset of the shop's zone.
func (h *Checkout) DeskCSV(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	f, err := h.deskFilter(c)
	if err != nil {
		return err
	}
	form, err := ordersCSVOf(c)
	if err != nil {
		return err
	}
	if _, err := h.Checkout.DeskOrders(c.UserContext(), cl, checkout.DeskFilter{Limit: 1, Status: f.Status}); err != nil {
		return err // a refusal (a shopper, a bad status) answers as an error, not as a broken download
	}
	ctx := context.WithoutCancel(c.UserContext())
	return streamCSV(c, "orders.csv", form.header(DeskCSVColumns), func(write func([]string) error) error {
		return h.Checkout.DeskExport(ctx, cl, f, func(o checkout.DeskExportRow) error {
			return write([]string{o.Number, strconv.FormatInt(o.ID, 10), strconv.FormatInt(o.GoodsID, 10), o.GoodsTitle,
				o.Username, strconv.FormatInt(o.UserID, 10), form.status(o.Status), model.Yuan(o.AmountCents), model.Yuan(o.DiscountCents),
				model.Yuan(o.PaidCents), form.time(&o.CreatedAt), form.time(o.PaidAt), form.time(o.RefundedAt), o.RefundedBy, o.RefundReason})
		})
	})
}
