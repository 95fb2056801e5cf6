package db

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/sqlite"
	"golang.org/x/crypto/bcrypt"
)

// Store is the application's services: it decides grabs in Redis, keeps the
// durable record in SQLite, schedules later work in Asynq and publishes live
// events. It knows nothing of HTTP or HTML.
type Store struct {
	*backend.Backend
	// Revocations ends sessions (password changes); nil writes to Redis alone.
	Revocations *Revocations

	WebhookAllowPrivate bool
	BcryptCost          int       // 0 means bcrypt's default; tests lower it
	Hashes              *HashPool // runs bcrypt with bounded concurrency

	// red packets
	RedPacketRand Int64Source // splits packets; nil means math/rand/v2

	// coupons: reminder delivery
	SMTPURL            string        // mail server for email reminders; empty: email is not configured
	WebhookSecret      []byte        // key of the webhook signature (WEBHOOK_SECRET or derived)
	ReminderRetryDelay time.Duration // first retry of a failed email or webhook, doubling after; 0: 10s
}

// NewStore returns a store over the given parts with defaults filled in.
func NewStore(sqlite *sqlite.DB, rdb redis.UniversalClient) *Store {
	return &Store{
		Backend: backend.New(sqlite, rdb),
		Hashes:  DefaultHashPool(),
	}
}

func (s *Store) bcryptCost() int {
	if s.BcryptCost == 0 {
		return bcrypt.DefaultCost
	}
	return s.BcryptCost
}

// FlushAll moves every promotion's pending records to SQLite under the flush lock (tests; Main composes the steps).
func (s *Store) FlushAll(ctx context.Context) error {
	return s.Backend.FlushAll(ctx, s.FlushRedPackets, s.FlushCoupons)
}
