package redpacket

import (
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// The records a packet keeps in Redis, each an rdb.Record: one field list
// gives the grab script a constant per field's place (S_SEQ, C_USER,
// M_REQUEST, ...) and Go a codec over the same places, so neither names a
// field by its number. Adding a field: add it to the list and the struct,
// write it in the grab script and add it to TestRedPacketRecordsRoundTrip,
// which fails until both sides have it.
var (
	// shareFields: a share on the unclaimed list, "seq:amount" (Go writes
	// them at creation and restore; the grab script takes one).
	shareFields = rdb.NewRecord("share", "S_", ":",
		rdb.Field[share]{Name: "seq", Int: func(s *share) *int64 { return &s.seq }},
		rdb.Field[share]{Name: "amount", Int: func(s *share) *int64 { return &s.amount }},
	)
	// claimFields: a claim on the claimed list, the flush queue,
	// "user:seq:amount:grabbed_ms" (the grab script writes it).
	claimFields = rdb.NewRecord("claim", "C_", ":",
		rdb.Field[claimRec]{Name: "user", Int: func(c *claimRec) *int64 { return &c.user }},
		rdb.Field[claimRec]{Name: "seq", Int: func(c *claimRec) *int64 { return &c.seq }},
		rdb.Field[claimRec]{Name: "amount", Int: func(c *claimRec) *int64 { return &c.amount }},
		rdb.Field[claimRec]{Name: "grabbed", Int: func(c *claimRec) *int64 { return &c.grabbed }},
	)
	// mineFields: a user's claim in the claimed-by hash,
	// "request:seq:amount:grabbed_ms" (the grab script writes it and reads
	// it to answer a retry of the same request; Go writes it at a restore,
	// with the request "restored", and reads it for the wallet).
	mineFields = rdb.NewRecord("mine", "M_", ":",
		rdb.Field[mineRec]{Name: "request", Text: func(m *mineRec) *string { return &m.request }},
		rdb.Field[mineRec]{Name: "seq", Int: func(m *mineRec) *int64 { return &m.seq }},
		rdb.Field[mineRec]{Name: "amount", Int: func(m *mineRec) *int64 { return &m.amount }},
		rdb.Field[mineRec]{Name: "grabbed", Int: func(m *mineRec) *int64 { return &m.grabbed }},
	)
)

// recordsLua is the grab script's prelude: the three records' Lua.
var recordsLua = shareFields.Lua() + claimFields.Lua() + mineFields.Lua()

// claimRec is a claim record (see claimFields).
type claimRec struct{ user, seq, amount, grabbed int64 }

// mineRec is a claimed-by record (see mineFields).
type mineRec struct {
	request              string
	seq, amount, grabbed int64
}

func (sh share) String() string { return shareFields.Encode(&sh) }

// parseShare reads a share of the unclaimed list.
func parseShare(rec string) (share, error) { return shareFields.Decode(rec) }

// parseClaim reads a claim on the claimed list.
func parseClaim(rec string) (*model.RedPacketClaim, error) {
	c, err := claimFields.Decode(rec)
	if err != nil {
		return nil, err
	}
	return &model.RedPacketClaim{UserID: c.user, Seq: c.seq, AmountCents: c.amount, GrabbedAt: msTime(c.grabbed)}, nil
}

// parseMine reads a user's claim in the claimed-by hash.
func parseMine(userID int64, rec string) (*model.RedPacketClaim, error) {
	m, err := mineFields.Decode(rec)
	if err != nil {
		return nil, err
	}
	return &model.RedPacketClaim{UserID: userID, Seq: m.seq, AmountCents: m.amount, GrabbedAt: msTime(m.grabbed)}, nil
}
