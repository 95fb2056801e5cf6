package goods

import (
	"context"
)

// Test-only doors into the Redis records (record.go), for the external goods_test package.

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
