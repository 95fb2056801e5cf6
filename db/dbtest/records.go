package dbtest

import (
	"slices"
	"testing"
)

// RecordRead is how one side, the Go codec or the Lua prelude, read a
// record: the field names in order, each field's value, and the record the
// side wrote back from those fields.
type RecordRead struct {
	Names  []string
	Fields map[string]string
	Again  string
}

// CheckRecord is the round trip of a Redis record (rdb.Record) through both
// sides: want gives every field of the table (names) a value and names no
// other, and Go and Lua each name the same fields in the same order, read
// rec as want and write it back byte for byte. A field added on one side
// only fails it.
func CheckRecord(t testing.TB, kind, rec string, names []string, want map[string]string, goRead, luaRead RecordRead) {
	t.Helper()
	for _, name := range names {
		if _, ok := want[name]; !ok {
			t.Errorf("%s field %q of the record's table has no value in this test: add one the scripts write", kind, name)
		}
	}
	for name := range want {
		if !slices.Contains(names, name) {
			t.Errorf("%s field %q is not in the record's table", kind, name)
		}
	}
	for side, r := range map[string]RecordRead{"Go": goRead, "Lua": luaRead} {
		if r.Names != nil && !slices.Equal(r.Names, names) {
			t.Errorf("%s's %s fields %v, the table's %v", side, kind, r.Names, names)
		}
		for _, name := range names {
			if r.Fields[name] != want[name] {
				t.Errorf("%s field %s: %s read %q, want %q (record %q)", kind, name, side, r.Fields[name], want[name], rec)
			}
		}
		if r.Again != rec {
			t.Errorf("%s writes the %s record back as %q, the script wrote %q", side, kind, r.Again, rec)
		}
	}
}
