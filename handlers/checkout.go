package handlers

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"time"

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
func (h *Handlers) CheckoutPay(c *fiber.Ctx) error {
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
func (h *Handlers) Refund(c *fiber.Ctx) error {
	return h.orderAction(c, h.Checkout.Refund)
}

// PaymentCallback takes the payment gateway's signed callback:
// POST /api/payments/callback → 202 once accepted.
func (h *Handlers) PaymentCallback(c *fiber.Ctx) error {
	if err := h.Checkout.AcceptCallback(c.UserContext(), c.Body(), c.Get(checkout.SignatureHeader)); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"accepted": true})
}

// OrdersCSV streams a goods' orders as CSV: GET /api/admin/goods/{id}/orders.csv.
func (h *Handlers) OrdersCSV(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	ctx := context.WithoutCancel(c.UserContext())
	each, err := h.Goods.OrdersCSV(ctx, cl, id)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="goods-%d-orders.csv"`, id))
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		cw := csv.NewWriter(w)
		cw.Write(goods.CSVColumns)
		err := each(func(o *model.Order) error {
			paidAt := ""
			if o.PaidAt != nil {
				paidAt = o.PaidAt.UTC().Format(time.RFC3339)
			}
			cw.Write([]string{strconv.FormatInt(o.ID, 10), strconv.FormatInt(o.UserID, 10), o.Status,
				strconv.FormatInt(o.AmountCents, 10), strconv.FormatInt(o.DiscountCents, 10), strconv.FormatInt(o.PaidCents, 10),
				o.CreatedAt.UTC().Format(time.RFC3339), paidAt})
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			return w.Flush() // rows leave as they are read
		})
		cw.Flush()
		if err != nil {
			h.Goods.Log.Warn("orders CSV broke off", "goods", id, "err", err)
		}
	})
	return nil
}

// CheckoutPage is one of the caller's orders with the coupons that apply:
// GET /orders/{id}/checkout.
func (h *Handlers) CheckoutPage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	co, err := h.Checkout.ForOrder(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	v := views.CheckoutView{Order: *co.Order}
	for _, o := range co.Options {
		v.Options = append(v.Options, views.CheckoutOption{Coupon: *o.Coupon, DiscountCents: o.DiscountCents, Reason: o.Reason})
	}
	return render(c, fiber.StatusOK, views.CheckoutPage(h.page(c, "Checkout"), v))
}
