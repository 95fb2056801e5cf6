package goods_test

import (
	"testing"

	"github.com/seckill/seckill/db/goods/goodstest"
)

// goodsEnv is the goods area over a fresh Redis and durable store
// (goodstest.Env), with this package's own steps as its methods.
type goodsEnv struct{ *goodstest.Env }

func newGoodsEnv(t testing.TB) *goodsEnv { return &goodsEnv{goodstest.New(t)} }

// newGoodsEnvK is newGoodsEnv whose goods have k buckets.
func newGoodsEnvK(t testing.TB, k int) *goodsEnv { return &goodsEnv{goodstest.NewK(t, k)} }

// eachShards runs a goods test with goods of one Redis bucket and of three.
var eachShards = goodstest.EachShards

var wantCode = goodstest.WantCode
