package sale

// Hooks into the sale for the goods area's behaviour tests (db/goods) and
// the load bench: they reach what the product's own code never calls from
// outside the sale (a grab under a chosen request ID, a batch replayed, a
// replica's roll-back played). Nothing in the product calls them.

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// GrabBatches is how many batch calls ran and the grabs they decided.
func (s *Sale) GrabBatches() (calls, grabs int64) {
	return s.batches.calls.Load(), s.batches.grabs.Load()
}

// OnLiveLoad calls f each time a grab's load of missing goods starts reading SQLite.
func (s *Sale) OnLiveLoad(f func(goodsID int64)) { s.onLiveLoad = f }

// RollBackAsPromotedReplica leaves goods bucket n (of k) as a replica that
// lagged behind its master and was promoted holds it: the order sequence
// back at seq, and the bucket recorded as issued by another node (the dead
// master's ID).
func (s *Sale) RollBackAsPromotedReplica(ctx context.Context, goodsID int64, n, k int, seq int64) error {
	b := Bucket{Goods: goodsID, N: n, K: k}
	if err := s.Redis.Set(ctx, SeqKey(b), seq, 0).Err(); err != nil {
		return err
	}
	return s.Redis.HSet(ctx, InfoKey(b), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}

// MuteSaleChanges stops announcing sale changes to other processes, as if
// every message were lost: they must find out by their poll.
func (s *Sale) MuteSaleChanges() { s.memos.mute.Store(true) }

// OrderFieldNames are the fields of an order record, in order (record.go).
func OrderFieldNames() []string { return orderFields.Names() }

// OrderRecordFields reads an order record with the Go codec: each field's
// value as text, by name, and the record as the Go codec writes it again.
func OrderRecordFields(rec string) (map[string]string, string, error) {
	r, err := DecodeOrderRec(rec)
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

// LuaOrderFields runs luaOrderFieldsScript on rec: the names Lua knows,
// what it reads per name and the record it writes back.
func (s *Sale) LuaOrderFields(ctx context.Context, rec string) ([]string, map[string]string, string, error) {
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

// luaOrderFieldsScript answers what the goods scripts' prelude knows of an
// order record: the field names in order, then per field the value it reads
// from ARGV[1] ("<none>" past the record's end), then the record joined
// again by orderRecord.
var luaOrderFieldsScript = redis.NewScript(GoodsLua + `
local f = split(ARGV[1])
local out = {}
for i, name in ipairs(ORDER_FIELDS) do out[#out + 1] = name end
for i = 1, #ORDER_FIELDS do out[#out + 1] = f[i] or '<none>' end
out[#out + 1] = orderRecord(f)
return out
`)
