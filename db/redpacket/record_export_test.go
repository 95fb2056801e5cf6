package redpacket

import (
	"context"

	"github.com/seckill/seckill/db/rdb"
)

// Test-only doors into the Redis records (record.go), for the external redpacket_test package.

// RecordNames are the fields of a packet's record of kind share, claim or
// mine, in order (record.go).
func RecordNames(kind string) []string {
	switch kind {
	case "share":
		return shareFields.Names()
	case "claim":
		return claimFields.Names()
	}
	return mineFields.Names()
}

// RecordFields reads a record of kind share, claim or mine with the Go
// codec: each field's value as text, by name, and the record as the Go
// codec writes it again.
func RecordFields(kind, rec string) (map[string]string, string, error) {
	switch kind {
	case "share":
		return fieldsOf(shareFields, rec)
	case "claim":
		return fieldsOf(claimFields, rec)
	}
	return fieldsOf(mineFields, rec)
}

func fieldsOf[T any](r *rdb.Record[T], rec string) (map[string]string, string, error) {
	v, err := r.Decode(rec)
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	values := r.Values(&v)
	for i, name := range r.Names() {
		out[name] = values[i]
	}
	return out, r.Encode(&v), nil
}

// LuaRecordFields runs the Lua prelude of the record of kind share, claim
// or mine on rec (rdb.Record.Echo).
func (s *Service) LuaRecordFields(ctx context.Context, kind, rec string) ([]string, map[string]string, string, error) {
	switch kind {
	case "share":
		return shareFields.Echo(ctx, s.Redis, rec)
	case "claim":
		return claimFields.Echo(ctx, s.Redis, rec)
	}
	return mineFields.Echo(ctx, s.Redis, rec)
}

// UnclaimedKey names a packet's unclaimed list (ClaimedByKey: export_test.go).
var UnclaimedKey = unclaimedKey
