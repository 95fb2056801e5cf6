package coupon

import "github.com/seckill/seckill/db/rdb"

// grabFields are the fields of a grab record, "unit:user:grabbed-ms", the
// grab script's line on the template's flush queue (an rdb.Record): the
// script names each by its place (G_UNIT, G_USER, G_GRABBED) and
// parseGrabRecord reads the same places. Adding a field: add it here and
// to grabRecord, write it in the grab script and add it to
// TestGrabRecordRoundTrip, which fails until both sides have it.
var grabFields = rdb.NewRecord("grab", "G_", ":",
	rdb.Field[grabRecord]{Name: "unit", Int: func(g *grabRecord) *int64 { return &g.unit }},
	rdb.Field[grabRecord]{Name: "user", Int: func(g *grabRecord) *int64 { return &g.user }},
	rdb.Field[grabRecord]{Name: "grabbed", Int: func(g *grabRecord) *int64 { return &g.ms }},
)

// grabRecord is one grab record of a flush queue (see grabFields).
type grabRecord struct{ unit, user, ms int64 }

// parseGrabRecord reads a grab record; each of its numbers is positive.
func parseGrabRecord(rec string) (grabRecord, bool) {
	g, err := grabFields.Decode(rec)
	if err != nil || g.unit <= 0 || g.user <= 0 || g.ms <= 0 {
		return grabRecord{}, false
	}
	return g, true
}
