package coupon

import (
	"context"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Service runs coupons: it decides grabs in Redis, keeps templates, grabbed
// coupons, bookings and deliveries in the store, and sends reminders.
type Service struct {
	*backend.Backend
	// Settings reads a user's reminder addresses (the account area).
	Settings Settings

	SMTPURL             string        // mail server for email reminders; empty: email is not configured
	WebhookSecret       []byte        // key of the webhook signature (WEBHOOK_SECRET or derived)
	WebhookAllowPrivate bool          // webhooks may reach private and loopback addresses (tests, closed networks)
	RetryDelay          time.Duration // first retry of a failed email or webhook, doubling after; 0: 10s
	// Translate puts an English message (or one made from a translated
	// format) into the language of an account's locale: reminder emails are
	// in the language the shopper reads the shop in. Nil: English.
	Translate func(locale, msg string) string
}

// Settings gives a user's reminder addresses.
type Settings interface {
	UserSettings(ctx context.Context, userID int64) (model.Settings, error)
}
