package db

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/sqlite"
	"golang.org/x/sync/singleflight"
)

// Store is the application's services: it decides grabs in Redis, keeps the
// durable record in SQLite, schedules later work in Asynq and publishes live
// events. It knows nothing of HTTP or HTML.
type Store struct {
	*backend.Backend

	OrderTTL            time.Duration
	WebhookAllowPrivate bool

	liveLoads  *singleflight.Group // one load at a time of goods grabs found missing; nil: each grab loads
	onLiveLoad func(goodsID int64) // tests: called as a load starts reading SQLite
}

// NewStore returns a store over the given parts with defaults filled in.
func NewStore(sqlite *sqlite.DB, rdb redis.UniversalClient) *Store {
	return &Store{
		Backend:  backend.New(sqlite, rdb),
		OrderTTL: 30 * time.Minute,

		liveLoads: new(singleflight.Group),
	}
}

// FlushAll moves every promotion's pending records to SQLite under the flush lock (tests; Main composes the steps).
func (s *Store) FlushAll(ctx context.Context) error {
	return s.Backend.FlushAll(ctx, s.FlushOrders)
}
