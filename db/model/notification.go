package model

import "time"

// Notification is one message in a user's in-app inbox.
type Notification struct {
	ID        int64     `json:"id"`
	Kind      string    `json:"kind"`
	CouponID  int64     `json:"coupon_id"`
	GoodsID   int64     `json:"goods_id,omitempty"` // a goods reminder's goods
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
	Read      bool      `json:"read"`
}

// NotificationEvent is the live event that carries a new notification to its user.
type NotificationEvent struct {
	Type         string        `json:"type"`
	Notification *Notification `json:"notification"`
}

// NotificationCouponReminder is the kind of a coupon reminder in the inbox.
const NotificationCouponReminder = "coupon_reminder"

// NotificationGoodsReminder is the kind of a seckill goods reminder in the inbox.
const NotificationGoodsReminder = "goods_reminder"
