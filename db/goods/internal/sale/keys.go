package sale

import (
	"strconv"
	"strings"

	"github.com/seckill/seckill/db/backend"
)

// HashTag is in every Redis key of one goods' first bucket, {goods:ID}, so
// each script touches one Redis Cluster slot (other buckets: bucket.tag).
func HashTag(id int64) string { return "{goods:" + strconv.FormatInt(id, 10) + "}" }

// ScriptKeys are the keys every goods script receives, in this order:
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
//	10 counts   hash: unpaid, paid, expired, cancelled, failed, revenue, discount
//
// extra keys (a script's own, such as the grab's memo) follow these.
func ScriptKeys(bk Bucket, extra ...string) []string {
	// Every grab builds these, so they are cut from one string: two
	// allocations instead of eleven.
	t := bk.Tag()
	var b strings.Builder
	b.Grow(10*len(t) + scriptKeySuffixBytes)
	keys := make([]string, 0, 10+len(extra))
	ends := [10]int{}
	for i, suffix := range scriptKeySuffixes {
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

// bucketKeys are a bucket's ScriptKeys and the prefix of its memo keys:
// made once per bucket count read (shards.go), so a grab's call builds
// only its memo key.
type bucketKeys struct {
	script []string // ScriptKeys(b)
	memo   string   // MemoKey(b, "")
}

// keysOfBuckets is the bucketKeys of each of the k buckets of goods id.
func keysOfBuckets(id int64, k int) []bucketKeys {
	out := make([]bucketKeys, 0, k)
	for _, b := range BucketsOf(id, k) {
		out = append(out, bucketKeys{script: ScriptKeys(b), memo: MemoKey(b, "")})
	}
	return out
}

var scriptKeySuffixes = [10]string{":info", ":fresh", ":free", ":held", ":seq", ":orders", ":mine", ":deadlines", ":pending", ":counts"}

// scriptKeySuffixBytes is the suffixes' total length, to size the builder.
var scriptKeySuffixBytes = func() (n int) {
	for _, s := range scriptKeySuffixes {
		n += len(s)
	}
	return n
}()

func InfoKey(b Bucket) string      { return b.Tag() + ":info" }
func FreshKey(b Bucket) string     { return b.Tag() + ":fresh" }
func FreeKey(b Bucket) string      { return b.Tag() + ":free" }
func OrdersKey(b Bucket) string    { return b.Tag() + ":orders" }
func MineKey(b Bucket) string      { return b.Tag() + ":mine" }
func DeadlinesKey(b Bucket) string { return b.Tag() + ":deadlines" }
func CountsKey(b Bucket) string    { return b.Tag() + ":counts" }
func SeqKey(b Bucket) string       { return b.Tag() + ":seq" }

// SamplesKey is the goods' capped list of one-second samples for the live charts.
func SamplesKey(b Bucket) string { return b.Tag() + ":samples" }

// FlushQueue is the bucket's crash-safe flush queue of order records.
func FlushQueue(b Bucket) backend.FlushQueue {
	t := b.Tag()
	return backend.FlushQueue{Pending: t + ":pending", Processing: t + ":processing"}
}

// MemoKey remembers the answer to one grab request, so a retried command
// returns the same order instead of taking a second unit.
func MemoKey(b Bucket, requestID string) string { return b.Tag() + ":req:" + requestID }

// LostKey counts the times a process found that Redis lost goods state it
// had acknowledged (a bucket loaded again after it was emptied, a bucket
// whose sequences another node issued): the ledger's phantom watchers (orders/phantoms.go) look again
// at the orders they acknowledged when it moves.
const LostKey = "seckill:goods:lost"

// ActiveKey is the set of goods loaded into Redis whose orders may still
// change: the flush, stock sync and expiry sweep walk it. Grab scripts never
// touch it; preheat adds to it and the stock sync removes finished goods.
const ActiveKey = "seckill:goods:active"

// Key names one of the goods' Redis keys ("fresh", "free", "info", "pending", ...).
func Key(goodsID int64, name string) string { return HashTag(goodsID) + ":" + name }

// BucketKey names one of the Redis keys of bucket n of goods of k buckets.
func BucketKey(goodsID int64, n, k int, name string) string {
	return Bucket{Goods: goodsID, N: n, K: k}.Tag() + ":" + name
}
