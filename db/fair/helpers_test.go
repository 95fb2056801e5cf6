package fair_test

import (
	"testing"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods/goodstest"
)

// goodsEnv is the goods area over a fresh Redis and durable store
// (goodstest.Env), with this package's own steps as its methods.
type goodsEnv struct{ *goodstest.Env }

func newGoodsEnv(t testing.TB) *goodsEnv { return &goodsEnv{goodstest.New(t)} }

var wantCode = goodstest.WantCode

// fairOver is another process's fair sales over b, built with its goods.
func fairOver(b *backend.Backend) *fair.Service {
	_, f := fair.Open(b)
	return f
}
