package coupon

import "context"

// Test-only doors into the Redis records (record.go), for the external coupon_test package.

// GrabFieldNames are the fields of a grab record, in order (record.go).
func GrabFieldNames() []string { return grabFields.Names() }

// GrabRecordFields reads a grab record with the Go codec: each field's value
// as text, by name, and the record as the Go codec writes it again.
func GrabRecordFields(rec string) (map[string]string, string, bool) {
	g, ok := parseGrabRecord(rec)
	if !ok {
		return nil, "", false
	}
	out := map[string]string{}
	values := grabFields.Values(&g)
	for i, name := range grabFields.Names() {
		out[name] = values[i]
	}
	return out, grabFields.Encode(&g), true
}

// LuaGrabFields runs the grab record's Lua prelude on rec (rdb.Record.Echo).
func (s *Service) LuaGrabFields(ctx context.Context, rec string) ([]string, map[string]string, string, error) {
	return grabFields.Echo(ctx, s.Redis, rec)
}
