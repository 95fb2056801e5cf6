package db

import "time"

// WebhookReminder is the JSON body of a webhook reminder.
type WebhookReminder struct {
	Type          string    `json:"type"`
	CouponID      int64     `json:"coupon_id"`
	Title         string    `json:"title"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	MinutesBefore int       `json:"minutes_before"`
	UserID        int64     `json:"user_id"`
}
