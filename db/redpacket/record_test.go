package redpacket_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/redpacket"
)

// The records of a packet round trip, every field: Go writes a share, the
// real grab script takes it and writes the claim and the user's claimed-by
// record, the Go codec and the Lua prelude read each field back by name and
// write the record again byte for byte, the flush stores the claim and a
// restore writes the claimed-by record the script reads. A field added to
// record.go's tables but not written by the script (or not listed here), or
// one the script writes past a table, fails it.
func TestRedPacketRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	s.Rand = sequence{4, 0, 0, 70} // shares 5, 1, 1, 71, 922 of 1000
	p := s.create(model.NewRedPacket{Title: "records", TotalCents: 1000, Count: 5, Mode: model.RedPacketRandom})
	ids := s.users(4)
	for _, uid := range ids[:3] { // the share taken is seq 3, 71 cents (one is left: the packet stays open for the restore)
		if _, err := s.Grab(ctx, uid, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	user := ids[3]
	check := func(kind, rec string, want map[string]string) {
		t.Helper()
		got, again, err := redpacket.RecordFields(kind, rec)
		if err != nil {
			t.Errorf("Go reads the %s record %q: %v", kind, rec, err)
			return
		}
		luaNames, luaGot, luaAgain, err := s.LuaRecordFields(ctx, kind, rec)
		if err != nil {
			t.Errorf("Lua reads the %s record %q: %v", kind, rec, err)
			return
		}
		dbtest.CheckRecord(t, kind, rec, redpacket.RecordNames(kind), want,
			dbtest.RecordRead{Fields: got, Again: again}, dbtest.RecordRead{Names: luaNames, Fields: luaGot, Again: luaAgain})
	}

	share, err := s.Redis.LIndex(ctx, redpacket.UnclaimedKey(p.ID), 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	check("share", share, map[string]string{"seq": "3", "amount": "71"})

	keyed := db.WithIdempotencyKey(ctx, "records-1")
	g, err := s.Grab(keyed, user, p.ID)
	if err != nil || g.AmountCents != 71 {
		t.Fatalf("grab: %+v, %v", g, err)
	}
	grabbed := fmt.Sprint(g.GrabbedAt.UnixMilli())
	claims, err := s.Redis.LRange(ctx, redpacket.ClaimedKey(p.ID), -1, -1).Result()
	if err != nil || len(claims) != 1 {
		t.Fatalf("the claim: %q, %v", claims, err)
	}
	check("claim", claims[0], map[string]string{"user": fmt.Sprint(user), "seq": "3", "amount": "71", "grabbed": grabbed})
	mine, err := s.Redis.HGet(ctx, redpacket.ClaimedByKey(p.ID), fmt.Sprint(user)).Result()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := db.KeyedRequestID(keyed, "redpacket", user)
	check("mine", mine, map[string]string{"request": req, "seq": "3", "amount": "71", "grabbed": grabbed})

	// The script reads its claimed-by record by name: the same request is answered as before.
	s.advance(1000)
	if again, err := s.Grab(keyed, user, p.ID); err != nil || again.AmountCents != 71 || !again.GrabbedAt.Equal(g.GrabbedAt) {
		t.Errorf("the same request again: %+v, %v; want %+v", again, err, g)
	}

	// The store has every field of the claim.
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	var u, amount, at int64
	if err := s.SQL.R.QueryRow(`SELECT user_id, amount_cents, grabbed_ms FROM redpacket_shares WHERE redpacket_id = ? AND seq = 3`, p.ID).
		Scan(&u, &amount, &at); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%d:%d:%d", u, amount, at); got != fmt.Sprintf("%d:71:%s", user, grabbed) {
		t.Errorf("the stored claim is user:amount:grabbed %s, want %d:71:%s", got, user, grabbed)
	}

	// Restored from the store, Go writes the claimed-by record; the script and the wallet read it.
	rdb.FlushDB(ctx, s.redis.Client)
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	mine, err = s.Redis.HGet(ctx, redpacket.ClaimedByKey(p.ID), fmt.Sprint(user)).Result()
	if err != nil {
		t.Fatal(err)
	}
	check("mine", mine, map[string]string{"request": "restored", "seq": "3", "amount": "71", "grabbed": grabbed})
	if _, err := s.Grab(ctx, user, p.ID); db.ErrorCode(err) != db.EALREADY {
		t.Errorf("grab after the restore: %v, want already_grabbed", err)
	}
	opened, err := s.Opened(ctx, user, []*model.RedPacket{p})
	if err != nil || opened[p.ID] != 71 {
		t.Errorf("opened after the restore: %v, %v", opened, err)
	}

	for kind, bad := range map[string]string{"share": "3", "claim": "1:3:71", "mine": "r:3:71:1:x"} {
		if _, _, err := redpacket.RecordFields(kind, bad); err == nil {
			t.Errorf("Go read the %s record %q", kind, bad)
		}
		if _, _, _, err := s.LuaRecordFields(ctx, kind, bad); err == nil || !strings.Contains(err.Error(), "may not end there") {
			t.Errorf("Lua joined the %s record %q again: %v", kind, bad, err)
		}
	}
}
