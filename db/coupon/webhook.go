package coupon

import (
	"time"

	"github.com/seckill/seckill/db/outbound"
)

// WebhookReminder is the JSON body of a webhook reminder.
type WebhookReminder struct {
	Type          string    `json:"type"`
	CouponID      int64     `json:"coupon_id"`
	Title         string    `json:"title"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	MinutesBefore int       `json:"minutes_before"`
	UserID        int64     `json:"user_id"`
}

// webhook signs and sends webhook reminders as the service is configured.
func (s *Service) webhook() outbound.Webhook {
	return outbound.Webhook{Secret: s.WebhookSecret, AllowPrivate: s.WebhookAllowPrivate}
}
