package views

import (
	"strings"

	"github.com/a-h/templ"

	"github.com/seckill/seckill/db/model"
)

// CheckoutView is the checkout of one order: the order and the user's
// coupons, those that apply first (best discount first). With a payment
// provider, Methods are the ways to pay there and Trade the checkout open
// at it (nil: none yet), asking TradeCents.
type CheckoutView struct {
	Order      model.Order
	Options    []CheckoutOption
	Methods    []string
	Trade      *model.Checkout
	TradeCents int64
}

// methodLabel is the button paying by a method at the provider.
func methodLabel(method string) string {
	switch method {
	case model.MethodCard:
		return "Pay by card"
	case model.MethodAlipay:
		return "Pay with Alipay"
	case model.MethodWeChatPay:
		return "Pay with WeChat Pay"
	}
	return method
}

// methodName is a payment method as a shopper reads it.
func methodName(method string) string {
	switch method {
	case model.MethodCard:
		return "card"
	case model.MethodAlipay:
		return "Alipay"
	case model.MethodWeChatPay:
		return "WeChat Pay"
	}
	return method
}

// qrImage is a QR code the provider answered as an image our page may show:
// a PNG data URL, nothing loaded from another site.
func qrImage(dataURL string) (templ.SafeURL, bool) {
	if !strings.HasPrefix(dataURL, "data:image/png;base64,") {
		return "", false
	}
	return templ.SafeURL(dataURL), true
}

// CheckoutOption is one of the user's coupons for the order: its discount,
// or the reason it does not apply (below_minimum, expired, used).
type CheckoutOption struct {
	Coupon        model.UserCoupon
	DiscountCents int64
	Reason        string
}

// Best is the discount of the best coupon that applies (0: none applies).
func (v CheckoutView) Best() int64 {
	for _, o := range v.Options {
		if o.Reason == "" {
			return o.DiscountCents
		}
	}
	return 0
}

// bestID is the user coupon ID chosen at first: the best that applies (0: none).
func (v CheckoutView) bestID() int64 {
	for _, o := range v.Options {
		if o.Reason == "" {
			return o.Coupon.ID
		}
	}
	return 0
}

// reasonLabel is why a coupon does not apply, as a shopper reads it.
func reasonLabel(o CheckoutOption) string {
	switch o.Reason {
	case "below_minimum":
		return "Needs a spend of " + Money(o.Coupon.MinSpendCents)
	case "expired":
		return "Expired"
	case "used":
		return "Used already"
	}
	return o.Reason
}
