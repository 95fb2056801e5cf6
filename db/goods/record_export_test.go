package goods

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// Test-only doors into the Redis records (record.go), for the external goods_test package.

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
