package views

import (
	"fmt"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/seckill/seckill/db/model"
)

// SettingsForm is the state of the settings form.
type SettingsForm struct {
	Email      string
	WebhookURL string
	Error      string
}

// CouponForm is the state of the merchant's create-coupon form; Errors holds a message per field.
type CouponForm struct {
	Title, Kind, Value, MinSpend, Stock, LimitPerUser, ValidDays string
	GrabStartAt, GrabEndAt, TZOffset                             string
	Errors                                                       map[string]string
}

// CouponTerms describes what a coupon takes off, e.g. "¥10.00 off orders of ¥50.00 or more".
func CouponTerms(kind string, value, minSpend int64) string {
	off := Money(value) + " off"
	if kind == model.CouponPercentOff {
		off = strconv.FormatInt(value, 10) + "% off"
	}
	if minSpend > 0 {
		return off + " orders of " + Money(minSpend) + " or more"
	}
	return off + " any order"
}

// rfc3339 is the machine form of a time, for data attributes and <time>.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func testid(parts ...any) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "-"
		}
		s += fmt.Sprint(p)
	}
	return s
}

// channelLabel is a reminder channel as the shopper reads it (translated with T).
func channelLabel(ch string) string {
	switch ch {
	case model.ChannelApp:
		return "In app"
	case model.ChannelEmail:
		return "Email"
	case model.ChannelWebhook:
		return "Webhook"
	case model.ChannelSMS:
		return "SMS"
	case model.ChannelWechat:
		return "WeChat"
	}
	return ch
}

func deliveryCount(st *model.CouponStats, channel, status string) int64 {
	return st.Deliveries[channel][status]
}

// couponURL is where a coupon is shown to shoppers: its card in the coupon centre.
func couponURL(id int64) templ.SafeURL { return templ.SafeURL("/coupons#coupon-" + i64(id)) }
