package handlers

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// Confirmations before what cannot be undone, and the receipt after paying.
// Each irreversible action is a GET that asks and a POST that does it, so
// it works without JavaScript; the answer is shown beside the order it
// changed (views.PlaceOrder) or the controls that changed it.

// RefundConfirmPage asks before refunding one of the caller's orders: GET /orders/{id}/refund.
func (h *Checkout) RefundConfirmPage(c *fiber.Ctx) error {
	return h.orderConfirm(c, h.order, model.OrderPaid, "Only a paid order can be refunded.", views.RefundConfirm)
}

// CancelConfirmPage asks before cancelling one of the caller's orders: GET /orders/{id}/cancel.
func (h *Goods) CancelConfirmPage(c *fiber.Ctx) error {
	return h.orderConfirm(c, h.Goods.Order, model.OrderUnpaid, "Only an order awaiting payment can be cancelled.", views.CancelConfirm)
}

// orderConfirm shows the question for an order in state want, or sends the
// caller back to My orders with why not.
func (h *Site) orderConfirm(c *fiber.Ctx, read func(ctx context.Context, userID, orderID int64) (*model.Order, error), want, notNow string, ask func(model.Order) views.ConfirmView) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	o, err := read(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	if o.Status != want {
		return redirectWithNote(c, "/me/orders", views.FlashError, views.PlaceOrder(id), notNow)
	}
	v := ask(*o)
	return render(c, fiber.StatusOK, views.ConfirmPage(h.page(c, v.Title), v))
}

// order reads one of the caller's orders as its checkout shows it.
func (h *Checkout) order(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	co, err := h.Checkout.ForOrder(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	return co.Order, nil
}

// RefundForm refunds one of the caller's paid orders once confirmed: POST /orders/{id}/refund.
func (h *Checkout) RefundForm(c *fiber.Ctx) error {
	return h.orderForm(c, h.Checkout.Refund, func(o *model.Order) string { return "Refunded " + views.Money(o.PaidCents) + "." })
}

// CancelForm cancels one of the caller's unpaid orders once confirmed: POST /orders/{id}/cancel.
func (h *Goods) CancelForm(c *fiber.Ctx) error {
	return h.orderForm(c, h.Goods.CancelOrder, func(*model.Order) string { return "Cancelled." })
}

// orderForm runs a confirmed order action and answers beside the order in My orders.
func (h *Site) orderForm(c *fiber.Ctx, act func(ctx context.Context, userID, orderID int64) (*model.Order, error), done func(*model.Order) string) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	o, err := act(c.UserContext(), cl.UserID, id)
	if _, shown := refusal(err); shown {
		return redirectWithNote(c, "/me/orders", views.FlashError, views.PlaceOrder(id), db.ErrorMessage(err))
	} else if err != nil {
		return err
	}
	return redirectWithNote(c, "/me/orders", views.FlashSuccess, views.PlaceOrder(id), done(o))
}

// PayForm pays one of the caller's orders from the checkout form without
// JavaScript (coupon: the user coupon's ID, 0 for none) and ends on the
// receipt: POST /orders/{id}/pay.
func (h *Checkout) PayForm(c *fiber.Ctx) error {
	return checkoutForm(c, receiptPath, func(ctx context.Context, user, id, coupon int64) error {
		_, err := h.Checkout.Pay(ctx, user, id, coupon)
		return err
	})
}

// checkoutForm runs one checkout form's act on the caller's order with the
// coupon the form picked (its user coupon's ID, 0 for none), then goes to
// next(id); a refusal, or a coupon that is no number, goes back to the
// checkout with its note.
func checkoutForm(c *fiber.Ctx, next func(id int64) string, act func(ctx context.Context, user, id, coupon int64) error) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	coupon, perr := strconv.ParseInt(c.FormValue("coupon", "0"), 10, 64)
	if perr != nil || coupon < 0 {
		return redirectWithNote(c, checkoutPath(id), views.FlashError, views.PlaceCheckout, "Pick a coupon from the list, or none.")
	}
	if err := act(c.UserContext(), cl.UserID, id, coupon); err != nil {
		if _, shown := refusal(err); !shown {
			return err
		}
		return redirectWithNote(c, checkoutPath(id), views.FlashError, views.PlaceCheckout, db.ErrorMessage(err))
	}
	return c.Redirect(next(id), fiber.StatusSeeOther)
}

// ReceiptPage is a paid order's receipt: GET /orders/{id}/receipt. An order
// not paid yet goes to its checkout instead.
func (h *Checkout) ReceiptPage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	co, err := h.Checkout.ForOrder(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	if co.Order.PaidAt == nil {
		return c.Redirect(checkoutPath(id), fiber.StatusSeeOther)
	}
	v := views.ReceiptView{Order: *co.Order}
	for _, o := range co.Options {
		if co.Order.UserCouponID != 0 && o.Coupon.ID == co.Order.UserCouponID {
			v.CouponTitle = o.Coupon.Title
		}
	}
	return render(c, fiber.StatusOK, views.ReceiptPage(h.page(c, "Receipt "+model.OrderNumber(id)), v))
}

// AdminEndGoodsConfirm asks before ending a goods' sale: GET /admin/goods/{id}/end.
func (h *GoodsDesk) AdminEndGoodsConfirm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	g, err := h.Goods.Owned(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	v := views.EndSaleConfirm("goods", g.Title, "/admin/goods/"+strconv.FormatInt(id, 10))
	return render(c, fiber.StatusOK, views.ConfirmPage(h.page(c, v.Title), v))
}

// AdminEndSlotConfirm asks before ending a slot's sale: GET /admin/slots/{id}/end.
func (h *GoodsDesk) AdminEndSlotConfirm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	sl, err := h.Goods.OwnedSlot(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	v := views.EndSaleConfirm("slot", sl.Title, "/admin/slots/"+strconv.FormatInt(id, 10))
	return render(c, fiber.StatusOK, views.ConfirmPage(h.page(c, v.Title), v))
}

// confirmed reports whether an end-sale form was confirmed (the confirm
// page's); an unconfirmed post is sent to the confirm page.
func confirmed(c *fiber.Ctx) bool { return c.FormValue("confirmed") == "1" }

func checkoutPath(id int64) string { return "/orders/" + strconv.FormatInt(id, 10) + "/checkout" }
func receiptPath(id int64) string  { return "/orders/" + strconv.FormatInt(id, 10) + "/receipt" }
