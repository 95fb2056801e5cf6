package fair_test

import (
	"testing"

	"github.com/seckill/seckill/db/goods/goodstest"
)

// goodsEnv is the goods area over a fresh Redis and durable store
// (goodstest.Env), with this package's own steps as its methods.
type goodsEnv struct{ *goodstest.Env }

func newGoodsEnv(t testing.TB) *goodsEnv { return &goodsEnv{goodstest.New(t)} }

var wantCode = goodstest.WantCode
