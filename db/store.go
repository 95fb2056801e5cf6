package db

import (
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/singleflight"
)

// Store is the application's services: it decides grabs in Redis, keeps the
// durable record in SQLite, schedules later work in Asynq and publishes live
// events. It knows nothing of HTTP or HTML.
type Store struct {
	SQL   *SQLite
	Redis redis.UniversalClient
	Pipe  *Pipeliner // coalesces concurrent grab scripts into pipelines; nil runs them one by one
	// Background runs follow-up work (expiry enqueues) after the answer; nil runs it inline.
	Background *Background
	Events     *Events
	// Revocations ends sessions (password changes); nil writes to Redis alone.
	Revocations *Revocations
	Tasks       *asynq.Client    // schedules delayed work
	Queue       *asynq.Inspector // deletes scheduled work (paying deletes the expiry)
	Log         *slog.Logger
	Now         func() time.Time

	OrderTTL            time.Duration
	WebhookAllowPrivate bool
	BcryptCost          int       // 0 means bcrypt's default; tests lower it
	Hashes              *HashPool // runs bcrypt with bounded concurrency

	// red packets
	RedPacketRand Int64Source // splits packets; nil means math/rand/v2

	// coupons: reminder delivery
	SMTPURL            string        // mail server for email reminders; empty: email is not configured
	WebhookSecret      []byte        // key of the webhook signature (WEBHOOK_SECRET or derived)
	ReminderRetryDelay time.Duration // first retry of a failed email or webhook, doubling after; 0: 10s

	liveLoads  *singleflight.Group // one load at a time of goods grabs found missing; nil: each grab loads
	onLiveLoad func(goodsID int64) // tests: called as a load starts reading SQLite
}

// NewStore returns a store over the given parts with defaults filled in.
func NewStore(sqlite *SQLite, rdb redis.UniversalClient) *Store {
	return &Store{
		SQL:      sqlite,
		Redis:    rdb,
		Events:   NewEvents(rdb),
		Log:      slog.Default(),
		Now:      time.Now,
		OrderTTL: 30 * time.Minute,
		Hashes:   DefaultHashPool(),

		liveLoads: new(singleflight.Group),
	}
}

func (s *Store) bcryptCost() int {
	if s.BcryptCost == 0 {
		return bcrypt.DefaultCost
	}
	return s.BcryptCost
}
