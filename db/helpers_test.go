package db_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"golang.org/x/crypto/bcrypt"
)

// clock is a settable time source shared by a test's stores.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time)         { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// storeEnv is a store over a fresh Redis and SQLite, with a merchant
// ("merchant1", "password123") and a settable clock.
type storeEnv struct {
	t        testing.TB
	s        *db.Store
	clk      *clock
	merchant model.Claims
	ctx      context.Context
}

func newStoreEnv(t testing.TB) *storeEnv {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.SQLite(t)
	s := db.NewStore(sq, r.Client)
	s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s.BcryptCost = bcrypt.MinCost
	clk := &clock{now: time.Now().UTC().Truncate(time.Millisecond)}
	s.Now = clk.Now
	ctx := context.Background()
	u, err := s.CreateUser(ctx, "merchant1", "password123", model.RoleMerchant)
	if err != nil {
		t.Fatal(err)
	}
	return &storeEnv{t: t, s: s, clk: clk, merchant: model.Claims{UserID: u.ID, Username: u.Username, Role: u.Role}, ctx: ctx}
}
