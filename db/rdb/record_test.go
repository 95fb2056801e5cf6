package rdb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

type demoRec struct {
	id   int64
	note string
	at   int64
}

var demoFields = rdb.NewRecord("demo", "D_", "|",
	rdb.Field[demoRec]{Name: "id", Int: func(d *demoRec) *int64 { return &d.id }, Last: true},
	rdb.Field[demoRec]{Name: "note", Text: func(d *demoRec) *string { return &d.note }},
	rdb.Field[demoRec]{Name: "at", Int: func(d *demoRec) *int64 { return &d.at }},
)

// A record is written up to the shortest end that holds every field set,
// read back field by field, and refused at a length no record has; Lua
// reads and joins it the same way.
func TestRecordCodec(t *testing.T) {
	for _, tc := range []struct {
		v   demoRec
		rec string
	}{
		{demoRec{id: 7}, "7"},
		{demoRec{id: 7, note: "x"}, "7|x|0"},
		{demoRec{id: 7, at: 9}, "7||9"},
	} {
		if got := demoFields.Encode(&tc.v); got != tc.rec {
			t.Errorf("encode %+v = %q, want %q", tc.v, got, tc.rec)
		}
		if got, err := demoFields.Decode(tc.rec); err != nil || got != tc.v {
			t.Errorf("decode %q = %+v, %v; want %+v", tc.rec, got, err, tc.v)
		}
	}
	for _, bad := range []string{"7|x", "7|x|9|1", "a|x|9", "7|x|b"} {
		if v, err := demoFields.Decode(bad); err == nil {
			t.Errorf("decode %q = %+v, want an error", bad, v)
		}
	}
	r := dbtest.Redis(t)
	ctx := context.Background()
	names, fields, again, err := demoFields.Echo(ctx, r.Client, "7|x|9")
	if err != nil || strings.Join(names, ",") != "id,note,at" || fields["id"] != "7" || fields["note"] != "x" || fields["at"] != "9" || again != "7|x|9" {
		t.Errorf("Lua reads 7|x|9 as %v %v %q (%v)", names, fields, again, err)
	}
	if _, _, _, err := demoFields.Echo(ctx, r.Client, "7|x"); err == nil || !strings.Contains(err.Error(), "may not end there") {
		t.Errorf("Lua joined 7|x: %v", err)
	}
	if !strings.Contains(demoFields.Lua(), "local D_ID, D_NOTE, D_AT = 1, 2, 3") {
		t.Errorf("Lua constants missing from\n%s", demoFields.Lua())
	}
}
