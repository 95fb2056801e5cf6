package raffle_test

import (
	"testing"

	"github.com/seckill/seckill/db/goods/goodstest"
)

// goodsEnv is the goods area with fair sales plugged in over a fresh Redis
// and durable store (goodstest.Env), with the raffle tests' steps as its methods.
type goodsEnv struct{ *goodstest.Env }

func newGoodsEnv(t testing.TB) *goodsEnv { return &goodsEnv{goodstest.New(t)} }

var wantCode = goodstest.WantCode
