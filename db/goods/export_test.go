package goods

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// Test-only doors into the goods internals, for the external goods_test package.

// GrabWithRequestID runs the grab script under a chosen request ID, as a go-redis retry would.
func (s *Service) GrabWithRequestID(ctx context.Context, userID, goodsID int64, requestID string) (*model.Order, error) {
	return s.grab(ctx, userID, goodsID, requestID, false)
}

// PayAt pays as if the clock read now.
func (s *Service) PayAt(ctx context.Context, userID, orderID int64, now time.Time) (*model.Order, error) {
	return s.payOrder(ctx, userID, orderID, now)
}

// ExpireAt expires as if the clock read now.
func (s *Service) ExpireAt(ctx context.Context, orderID int64, now time.Time) error {
	return s.expireOrder(ctx, orderID, now)
}

// MoveOrderBatch moves one batch of the goods' order records to processing
// and stops there, as a flush killed between the move and the commit would.
func (s *Service) MoveOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	recs, err := s.TakeBatch(ctx, flushQueue(bucket0(goodsID)))
	return len(recs), err
}

// ApplyOrderBatch writes the batch now in processing to SQLite and commits,
// but leaves it in processing, as a flush killed between the commit and the release would.
func (s *Service) ApplyOrderBatch(ctx context.Context, goodsID int64) (int, error) {
	recs, err := s.Redis.LRange(ctx, flushQueue(bucket0(goodsID)).Processing, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	return len(recs), s.SQL.Tx(ctx, func(tx *sql.Tx) error { return s.applyOrders(ctx, goodsID, nil)(tx, recs) })
}

// Key names one of the goods' Redis keys ("fresh", "free", "info", "pending", ...).
func Key(goodsID int64, name string) string { return hashTag(goodsID) + ":" + name }

// BucketKey names one of the Redis keys of bucket n of goods of k buckets.
func BucketKey(goodsID int64, n, k int, name string) string {
	return bucket{goods: goodsID, n: n, k: k}.tag() + ":" + name
}

// HomeBucket is the bucket of k holding the user's orders.
func HomeBucket(userID int64, k int) int { return homeBucket(userID, k) }

// ActiveGoods lists the goods the flush, sync and sweep visit.
func (s *Service) ActiveGoods(ctx context.Context) ([]int64, error) { return s.activeGoods(ctx) }

// OnLiveLoad calls f each time a grab's load of missing goods starts reading SQLite.
func (s *Service) OnLiveLoad(f func(goodsID int64)) { s.onLiveLoad = f }

// ExpiryLockKey is the key of the expiry tick's lock.
const ExpiryLockKey = expiryLockKey

// ExpireFirstDue expires the first n orders due on the goods without the
// tick's lock, as a tick that died after one batch would have left them.
func (s *Service) ExpireFirstDue(ctx context.Context, goodsID int64, n int) (int, error) {
	bs, err := s.bucketsOfGoods(ctx, goodsID)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, b := range bs {
		seqs, err := s.Redis.ZRangeByScore(ctx, deadlinesKey(b), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(s.Now().UnixMilli(), 10), Count: int64(n - total),
		}).Result()
		if err != nil {
			return total, err
		}
		if len(seqs) == 0 {
			continue
		}
		expired, _, err := s.expireBatch(ctx, b, seqs, s.Now())
		total += expired
		if err != nil || total >= n {
			return total, err
		}
	}
	return total, nil
}

// RollBackAsPromotedReplica leaves goods bucket n (of k) as a replica that
// lagged behind its master and was promoted holds it: the order sequence
// back at seq, and the bucket recorded as issued by another node (the dead
// master's ID).
func (s *Service) RollBackAsPromotedReplica(ctx context.Context, goodsID int64, n, k int, seq int64) error {
	b := bucket{goods: goodsID, n: n, k: k}
	if err := s.Redis.Set(ctx, seqKey(b), seq, 0).Err(); err != nil {
		return err
	}
	return s.Redis.HSet(ctx, infoKey(b), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}

// LoseOrder takes an order out of Redis as a node that died before
// replicating its grab would: its record, its flush record and its
// deadline are gone, and its count (the unit and limit mark stay taken, as a
// test needs no more).
func (s *Service) LoseOrder(ctx context.Context, orderID int64) error {
	goodsID, seq, _ := SplitOrderID(orderID)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return err
	}
	field := strconv.FormatInt(seq, 10)
	rec, err := s.Redis.HGet(ctx, ordersKey(b), field).Result()
	if err != nil {
		return err
	}
	if err := s.Redis.LRem(ctx, flushQueue(b).Pending, 0, rec).Err(); err != nil {
		return err
	}
	if err := s.Redis.ZRem(ctx, deadlinesKey(b), field).Err(); err != nil {
		return err
	}
	if err := s.Redis.HIncrBy(ctx, countsKey(b), "unpaid", -1).Err(); err != nil {
		return err
	}
	return s.Redis.HDel(ctx, ordersKey(b), field).Err()
}

// ParseOrderRecord reads an order record as the service does (record.go).
func ParseOrderRecord(goodsID int64, rec string) (*model.Order, error) {
	return parseOrderRecord(goodsID, rec)
}

// OrderFieldNames are the fields of an order record, in order (record.go).
func OrderFieldNames() []string { return orderFields.Names() }

// OrderRecordFields reads an order record with the Go codec: each field's
// value as text, by name, and the record as the Go codec writes it again.
func OrderRecordFields(rec string) (map[string]string, string, error) {
	r, err := decodeOrderRec(rec)
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	values := orderFields.Values(&r)
	for i, name := range orderFields.Names() {
		out[name] = values[i]
	}
	again := r.encode()
	return out, again, nil
}

// luaOrderFieldsScript answers what the goods scripts' prelude knows of an
// order record: the field names in order, then per field the value it reads
// from ARGV[1] ("<none>" past the record's end), then the record joined
// again by orderRecord.
var luaOrderFieldsScript = redis.NewScript(goodsLua + `
local f = split(ARGV[1])
local out = {}
for i, name in ipairs(ORDER_FIELDS) do out[#out + 1] = name end
for i = 1, #ORDER_FIELDS do out[#out + 1] = f[i] or '<none>' end
out[#out + 1] = orderRecord(f)
return out
`)

// LuaOrderFields runs luaOrderFieldsScript on rec: the names Lua knows,
// what it reads per name and the record it writes back.
func (s *Service) LuaOrderFields(ctx context.Context, rec string) ([]string, map[string]string, string, error) {
	res, err := luaOrderFieldsScript.Run(ctx, s.Redis, []string{Key(0, "info")}, rec).StringSlice()
	if err != nil {
		return nil, nil, "", err
	}
	n := (len(res) - 1) / 2
	if len(res) != 2*n+1 {
		return nil, nil, "", fmt.Errorf("lua answered %q", res)
	}
	fields := map[string]string{}
	for i, name := range res[:n] {
		fields[name] = res[n+i]
	}
	return res[:n], fields, res[2*n], nil
}

// VoidOrder fails the order in Redis as voidConflicts does when the store
// refused it; it answers the script's word and the record it wrote.
func (s *Service) VoidOrder(ctx context.Context, o *model.Order) (string, string, error) {
	goodsID, seq, _ := SplitOrderID(o.ID)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return "", "", err
	}
	res, err := voidScript.Run(ctx, s.Redis, scriptKeys(b), seq, s.Now().UnixMilli(), o.UserID, o.Unit, o.CreatedAt.UnixMilli()).Text()
	if err != nil {
		return "", "", err
	}
	a, err := parseAnswer(goodsID, res)
	return a.code, a.rec, err
}

// SampleFieldNames are the fields of a sample, in order (record.go).
func SampleFieldNames() []string { return sampleFields.Names() }

// SampleRecordFields reads a sample with the Go codec: each field's value
// as text, by name, and the sample as the Go codec writes it again.
func SampleRecordFields(rec string) (map[string]string, string, error) {
	smp, err := sampleFields.Decode(rec)
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	values := sampleFields.Values(&smp)
	for i, name := range sampleFields.Names() {
		out[name] = values[i]
	}
	return out, sampleFields.Encode(&smp), nil
}

// LuaSampleFields runs the sample's Lua prelude on rec (rdb.Record.Echo).
func (s *Service) LuaSampleFields(ctx context.Context, rec string) ([]string, map[string]string, string, error) {
	return sampleFields.Echo(ctx, s.Redis, rec)
}
