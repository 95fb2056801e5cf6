package model

import (
	"sort"
	"time"
)

// Coupon kinds.
const (
	CouponAmountOff  = "amount_off"
	CouponPercentOff = "percent_off"
)

// Window states of a coupon template.
const (
	CouponUpcoming = "upcoming"
	CouponLive     = "live"
	CouponEnded    = "ended"
)

// Coupon is a coupon template: what a merchant puts up for grabs.
type Coupon struct {
	ID            int64     `json:"id"`
	ShopID        int64     `json:"shop_id"`
	Title         string    `json:"title"`
	Kind          string    `json:"kind"`
	Value         int64     `json:"value"`
	MinSpendCents int64     `json:"min_spend_cents"`
	Stock         int64     `json:"stock"`
	LimitPerUser  int64     `json:"limit_per_user"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	GrabEndAt     time.Time `json:"grab_end_at"`
	ValidDays     int       `json:"valid_days"`
	Remaining     int64     `json:"remaining"`
	State         string    `json:"state"`
}

// CouponInput is what a merchant sends to create a coupon template.
type CouponInput struct {
	Title         string    `json:"title"`
	Kind          string    `json:"kind"`
	Value         int64     `json:"value"`
	MinSpendCents int64     `json:"min_spend_cents"`
	Stock         int64     `json:"stock"`
	LimitPerUser  int64     `json:"limit_per_user"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	GrabEndAt     time.Time `json:"grab_end_at"`
	ValidDays     int       `json:"valid_days"`
}

// UserCoupon is a coupon a user has grabbed.
type UserCoupon struct {
	ID         int64     `json:"id"`
	CouponID   int64     `json:"coupon_id"`
	UserID     int64     `json:"user_id"`
	Status     string    `json:"status"`
	GrabbedAt  time.Time `json:"grabbed_at"`
	ValidUntil time.Time `json:"valid_until"`
	// The template's terms, filled when listing a user's coupons.
	Title         string `json:"title,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Value         int64  `json:"value,omitempty"`
	MinSpendCents int64  `json:"min_spend_cents,omitempty"`
	// OrderID is the order a used coupon paid for.
	OrderID int64 `json:"order_id,omitempty"`
}

// Reminder channels, in the order that fixes their place in the bitmap.
const (
	ChannelApp     = "app"
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
	ChannelSMS     = "sms"
	ChannelWechat  = "wechat"
)

// ChannelName is a reminder channel as a sentence names it: "SMS", "WeChat".
func ChannelName(channel string) string {
	switch channel {
	case ChannelApp:
		return "App"
	case ChannelEmail:
		return "Email"
	case ChannelWebhook:
		return "Webhook"
	case ChannelSMS:
		return "SMS"
	case ChannelWechat:
		return "WeChat"
	}
	return channel
}

// Channels lists every reminder channel; its index is the channel's number in the bitmap.
var Channels = []string{ChannelApp, ChannelEmail, ChannelWebhook, ChannelSMS, ChannelWechat}

// Lead times: 5, 10, … 60 minutes before the grab window opens.
const (
	LeadStep    = 5
	LeadTimes   = 12
	MaxLeadTime = LeadStep * LeadTimes
)

// LeadTimeList returns the bookable lead times in minutes, shortest first.
func LeadTimeList() []int {
	out := make([]int, LeadTimes)
	for i := range out {
		out[i] = (i + 1) * LeadStep
	}
	return out
}

// RemindAt is when a reminder minutes before start is due.
func RemindAt(start time.Time, minutes int) time.Time {
	return start.Add(-time.Duration(minutes) * time.Minute)
}

// BookedReminder is one booked reminder with the time it is due.
type BookedReminder struct {
	CouponID      int64     `json:"coupon_id,omitempty"`
	GoodsID       int64     `json:"goods_id,omitempty"`
	Title         string    `json:"title,omitempty"`
	MinutesBefore int       `json:"minutes_before"`
	Channel       string    `json:"channel"`
	RemindAt      time.Time `json:"remind_at"`
}

// BookingCount is how many users booked one (lead time, channel) of a template.
type BookingCount struct {
	MinutesBefore int    `json:"minutes_before"`
	Channel       string `json:"channel"`
	Count         int64  `json:"count"`
}

// CouponStats is a template with its live and durable figures and its reminder bookings.
type CouponStats struct {
	Coupon    *Coupon `json:"coupon"`
	Stock     int64   `json:"stock"`
	Remaining int64   `json:"remaining"`
	Grabbed   int64   `json:"grabbed"`
	DB        struct {
		Grabbed int64 `json:"grabbed"`
	} `json:"db"`
	Bookings   []BookingCount              `json:"bookings"`
	Deliveries map[string]map[string]int64 `json:"deliveries"` // channel → status → count
}

// BookingsOf returns the number of bookings of (minutes, channel).
func (st *CouponStats) BookingsOf(minutes int, channel string) int64 {
	for _, b := range st.Bookings {
		if b.MinutesBefore == minutes && b.Channel == channel {
			return b.Count
		}
	}
	return 0
}

// TotalBookings is the number of booked (lead time, channel) pairs.
func (st *CouponStats) TotalBookings() int64 {
	var n int64
	for _, b := range st.Bookings {
		n += b.Count
	}
	return n
}

// CouponCentre is what the shopper's coupon page shows: live and upcoming
// templates, the user's reminders for them and which channels they may book.
type CouponCentre struct {
	Now       time.Time
	Coupons   []*Coupon
	Reminders map[int64][]BookedReminder // by template
	Channels  map[string]string          // channel → why it cannot be booked ("" when it can)
	Held      map[int64]int64            // by template: coupons the user holds, what the limit counts
}

// MergeReminders lists the reminders of several lists (coupons', goods')
// soonest first; those due at the same time keep their lists' order.
func MergeReminders(lists ...[]BookedReminder) []BookedReminder {
	out := []BookedReminder{}
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RemindAt.Before(out[j].RemindAt) })
	return out
}

// User coupon statuses. A coupon past its validity reads expired wherever
// it is shown, before the periodic task marks it so in the store.
const (
	CouponUnused  = "unused"
	CouponUsed    = "used"
	CouponExpired = "expired"
)

// CouponDiscount is what a coupon of kind and value takes off amountCents:
// amount_off its value, at most the amount; percent_off that share rounded
// down to the cent.
func CouponDiscount(kind string, value, amountCents int64) int64 {
	switch kind {
	case CouponAmountOff:
		return max(0, min(value, amountCents))
	case CouponPercentOff:
		return max(0, min(amountCents, amountCents*value/100))
	}
	return 0
}
