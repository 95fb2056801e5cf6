package db

import (
	"strconv"
	"strings"

	"github.com/seckill/seckill/db/backend"
)

// Every Redis key of one goods carries the tag {goods:ID}, so each script
// touches one Redis Cluster slot.
func goodsTag(id int64) string { return "{goods:" + strconv.FormatInt(id, 10) + "}" }

// goodsScriptKeys are the keys every goods script receives, in this order:
//
//	1 info      hash: start, end (unix ms), price (seckill cents), limit, stock, slot
//	2 fresh     string: units never sold yet; a grab takes unit n and leaves n-1
//	3 free      list: units given back by expiry or cancel, taken before fresh ones
//	4 held      hash: user → live (unpaid or paid) orders, the per-user limit mark
//	5 seq       string: last order sequence number
//	6 orders    hash: sequence → order record
//	7 mine      hash: user → comma-separated sequences of the user's orders
//	8 deadlines zset: sequence of each unpaid order, scored by its expiry (unix ms)
//	9 pending   list: order records waiting for the batch flush
//	10 counts   hash: unpaid, paid, expired, cancelled, failed, revenue
//
// extra keys (a script's own, such as the grab's memo) follow these.
func goodsScriptKeys(id int64, extra ...string) []string {
	// Every grab builds these, so they are cut from one string: two
	// allocations instead of eleven.
	t := goodsTag(id)
	var b strings.Builder
	b.Grow(10*len(t) + goodsKeySuffixBytes)
	keys := make([]string, 0, 10+len(extra))
	ends := [10]int{}
	for i, suffix := range goodsKeySuffixes {
		b.WriteString(t)
		b.WriteString(suffix)
		ends[i] = b.Len()
	}
	all, start := b.String(), 0
	for _, end := range ends {
		keys = append(keys, all[start:end])
		start = end
	}
	return append(keys, extra...)
}

var goodsKeySuffixes = [10]string{":info", ":fresh", ":free", ":held", ":seq", ":orders", ":mine", ":deadlines", ":pending", ":counts"}

// goodsKeySuffixBytes is the suffixes' total length, to size the builder.
var goodsKeySuffixBytes = func() (n int) {
	for _, s := range goodsKeySuffixes {
		n += len(s)
	}
	return n
}()

func goodsInfoKey(id int64) string      { return goodsTag(id) + ":info" }
func goodsFreshKey(id int64) string     { return goodsTag(id) + ":fresh" }
func goodsFreeKey(id int64) string      { return goodsTag(id) + ":free" }
func goodsOrdersKey(id int64) string    { return goodsTag(id) + ":orders" }
func goodsMineKey(id int64) string      { return goodsTag(id) + ":mine" }
func goodsDeadlinesKey(id int64) string { return goodsTag(id) + ":deadlines" }
func goodsCountsKey(id int64) string    { return goodsTag(id) + ":counts" }

// goodsQueue is the goods' crash-safe flush queue of order records.
func goodsQueue(id int64) backend.FlushQueue {
	t := goodsTag(id)
	return backend.FlushQueue{Pending: t + ":pending", Processing: t + ":processing"}
}

// grabMemoKey remembers the answer to one grab request, so a retried command
// returns the same order instead of taking a second unit.
func grabMemoKey(id int64, requestID string) string { return goodsTag(id) + ":req:" + requestID }

// activeGoodsKey is the set of goods loaded into Redis whose orders may still
// change: the flush, stock sync and expiry sweep walk it. Grab scripts never
// touch it; preheat adds to it and the stock sync removes finished goods.
const activeGoodsKey = "seckill:goods:active"
