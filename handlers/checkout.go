package handlers

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// payBody is the optional body of a pay: the coupon to pay with.
type payBody struct {
	UserCouponID int64 `json:"user_coupon_id"`
}

// CheckoutPay pays one of the caller's orders, with a coupon when the body
// names one: POST /api/orders/{id}/pay.
func (h *Checkout) CheckoutPay(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	var in payBody
	if len(c.Body()) > 0 {
		if err := bind(c, &in); err != nil {
			return err
		}
		if in.UserCouponID < 0 {
			return db.FieldErrorf("user_coupon_id", "must be a positive integer")
		}
	}
	ctx, err := opContext(c)
	if err != nil {
		return err
	}
	o, err := h.Checkout.Pay(ctx, cl.UserID, id, in.UserCouponID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"order": o})
}

// Refund refunds one of the caller's paid orders: POST /api/orders/{id}/refund.
func (h *Checkout) Refund(c *fiber.Ctx) error {
	return orderAction(c, h.Checkout.Refund)
}

// PaymentCallback takes the payment gateway's signed callback:
// POST /api/payments/callback → 202 once accepted.
func (h *Checkout) PaymentCallback(c *fiber.Ctx) error {
	if err := h.Checkout.AcceptCallback(c.UserContext(), c.Body(), c.Get(checkout.SignatureHeader)); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"accepted": true})
}

// OrdersCSV streams a goods' orders as CSV, in the contract's columns
// (goods.CSVColumns): GET /api/admin/goods/{id}/orders.csv, written for its
// reader or, with format=machine, for a program (ordersCSV).
func (h *GoodsDesk) OrdersCSV(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	form, err := ordersCSVOf(c)
	if err != nil {
		return err
	}
	ctx := context.WithoutCancel(c.UserContext())
	each, err := h.Goods.OrdersCSV(ctx, cl, id)
	if err != nil {
		return err
	}
	return streamCSV(c, fmt.Sprintf("goods-%d-orders.csv", id), form.header(goods.CSVColumns), func(write func([]string) error) error {
		err := each(func(o *model.Order, username string) error {
			return write([]string{model.OrderNumber(o.ID), strconv.FormatInt(o.ID, 10), username, strconv.FormatInt(o.UserID, 10), form.status(o.Status),
				model.Yuan(o.AmountCents), model.Yuan(o.DiscountCents), model.Yuan(o.PaidCents), form.time(&o.CreatedAt), form.time(o.PaidAt)})
		})
		if err != nil {
			h.log().Warn("orders CSV broke off", "goods", id, "err", err)
		}
		return err
	})
}

// CheckoutPage is one of the caller's orders with the coupons that apply:
// GET /orders/{id}/checkout.
func (h *Checkout) CheckoutPage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	co, err := h.Checkout.ForOrder(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	v := views.CheckoutView{Order: *co.Order, Methods: h.Checkout.Methods()}
	if co.Order.Status == model.OrderUnpaid {
		if v.Trade, v.TradeCents, err = h.Checkout.OpenCheckout(c.UserContext(), cl.UserID, id); err != nil {
			return err
		}
	}
	for _, o := range co.Options {
		v.Options = append(v.Options, views.CheckoutOption{Coupon: *o.Coupon, DiscountCents: o.DiscountCents, Reason: o.Reason})
	}
	return render(c, fiber.StatusOK, views.CheckoutPage(h.page(c, "Checkout"), v))
}
