package account_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"golang.org/x/crypto/bcrypt"
)

// env is the accounts over a fresh Redis and SQLite, with a settable clock
// and one merchant, merchant1 / password123.
type env struct {
	s        *account.Service
	clk      *dbtest.Clock
	merchant *model.User
	ctx      context.Context
}

func newEnv(t testing.TB) *env {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := dbtest.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	b.Now = clk.Now
	s := account.New(b)
	s.BcryptCost = bcrypt.MinCost
	ctx := context.Background()
	u, err := s.CreateUser(ctx, "merchant1", "password123", model.RoleMerchant)
	if err != nil {
		t.Fatal(err)
	}
	return &env{s: s, clk: clk, merchant: u, ctx: ctx}
}

func asError(err error, target **db.Error) bool {
	e, ok := err.(*db.Error)
	if ok {
		*target = e
	}
	return ok
}
