package redpacket_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/redpacket"
)

// plainService is a service over this test's own Redis and SQLite, on the wall clock.
func plainService(t *testing.T) *redpacket.Service {
	t.Helper()
	return &redpacket.Service{Backend: backend.New(dbtest.DB(t), dbtest.Redis(t).Client)}
}

func addUsers(t *testing.T, s *redpacket.Service, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	err := s.SQL.Tx(context.Background(), func(tx *sql.Tx) error {
		for i := range ids {
			if err := tx.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, 'x', 'user', 0) RETURNING id`, fmt.Sprintf("in_%d", i)).Scan(&ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A flush interrupted between applying a batch and committing it, and one
// interrupted after committing but before releasing the batch, are both
// repaired by the next flush: every claim lands in SQLite exactly once.
func TestFlushInterruptedMidBatch(t *testing.T) {
	ctx := context.Background()
	s := plainService(t)
	const n = 1234 // three batches of backend.FlushBatchSize
	ids := addUsers(t, s, n+1)
	p, err := s.Create(ctx, ids[n], model.NewRedPacket{Title: "flush", TotalCents: 99_999, Count: n, Mode: model.RedPacketRandom})
	if err != nil {
		t.Fatal(err)
	}
	won := map[int64]int64{}
	for _, uid := range ids[:n] {
		g, err := s.Grab(ctx, uid, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		won[uid] = g.AmountCents
	}

	// Crash 1: the second batch is applied inside its transaction, then the process dies before commit.
	crash := errors.New("crash before commit")
	batches := 0
	_, err = s.Flush(ctx, redpacket.FlushQueue(p.ID), func(tx *sql.Tx, recs []string) error {
		if err := redpacket.ApplyClaims(s, ctx, tx, p.ID, recs); err != nil {
			return err
		}
		if batches++; batches == 2 {
			return crash
		}
		return nil
	})
	if !errors.Is(err, crash) {
		t.Fatalf("interrupted flush: %v", err)
	}
	if got := s.Redis.LLen(ctx, redpacket.ProcessingKey(p.ID)).Val(); got != backend.FlushBatchSize {
		t.Fatalf("processing holds %d claims after the crash, want the batch of %d", got, backend.FlushBatchSize)
	}
	if err := s.FlushClaims(ctx); err != nil {
		t.Fatal(err)
	}
	checkClaimsOnce(t, s, p.ID, won)

	// Crash 2: a batch committed, but the process died before deleting it from processing.
	replay, _ := s.SQL.R.Query(`SELECT user_id, seq, amount_cents, grabbed_ms FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL LIMIT 300`, p.ID)
	for replay.Next() {
		var uid, seq, amount, at int64
		replay.Scan(&uid, &seq, &amount, &at)
		s.Redis.RPush(ctx, redpacket.ProcessingKey(p.ID), fmt.Sprintf("%d:%d:%d:%d", uid, seq, amount, at))
	}
	replay.Close()
	s.Redis.SAdd(ctx, redpacket.FlushingKey, p.ID)
	if err := s.FlushClaims(ctx); err != nil {
		t.Fatal(err)
	}
	checkClaimsOnce(t, s, p.ID, won)
}

func checkClaimsOnce(t *testing.T, s *redpacket.Service, id int64, won map[int64]int64) {
	t.Helper()
	rows, err := s.SQL.R.Query(`SELECT user_id, amount_cents FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64]int64{}
	for rows.Next() {
		var uid, amount int64
		rows.Scan(&uid, &amount)
		if _, dup := got[uid]; dup {
			t.Fatalf("user %d claimed twice in SQLite", uid)
		}
		got[uid] = amount
	}
	if len(got) != len(won) {
		t.Fatalf("SQLite holds %d claims, want %d", len(got), len(won))
	}
	for uid, a := range won {
		if got[uid] != a {
			t.Fatalf("user %d: SQLite %d cents, grab %d", uid, got[uid], a)
		}
	}
	var status string
	var claimed int64
	s.SQL.R.QueryRow(`SELECT status, claimed_count FROM redpackets WHERE id = ?`, id).Scan(&status, &claimed)
	if status != model.RedPacketFinished || claimed != int64(len(won)) {
		t.Fatalf("packet %s with claimed_count %d, want finished with %d", status, claimed, len(won))
	}
	if n := s.Redis.Exists(context.Background(), redpacket.ClaimedKey(id), redpacket.ProcessingKey(id)).Val(); n != 0 {
		t.Fatal("claims left in Redis after the flush")
	}
}

// go-redis runs a script again when its reply was lost: the same request
// gets the same share back, not already_grabbed, and takes nothing more.
func TestGrabReplayedRequest(t *testing.T) {
	ctx := context.Background()
	s := plainService(t)
	owner := addUsers(t, s, 1)[0]
	p, err := s.Create(ctx, owner, model.NewRedPacket{Title: "replay", TotalCents: 300, Count: 3, Mode: model.RedPacketFixed})
	if err != nil {
		t.Fatal(err)
	}
	keys := redpacket.GrabKeys(p.ID)
	// The shares reserved, as a grab that met the ceiling has them (ceiling.go).
	if err := s.Redis.HSet(ctx, redpacket.MetaKey(p.ID), "ceil", 3).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	first, err := redpacket.GrabScript.Run(ctx, s.Redis, keys, 42, "req-1", now).Text()
	if err != nil {
		t.Fatal(err)
	}
	again, err := redpacket.GrabScript.Run(ctx, s.Redis, keys, 42, "req-1", now+5).Text()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("ok:100:%d:2", now); first != want || again != want {
		t.Fatalf("first run %q, replay %q: want the same grab of 100 cents with 2 left, %q", first, again, want)
	}
	if other, _ := redpacket.GrabScript.Run(ctx, s.Redis, keys, 42, "req-2", now).Text(); other != "already_grabbed" {
		t.Fatalf("a new request by the same user: %q, want already_grabbed", other)
	}
	if l := s.Redis.LLen(ctx, redpacket.ClaimedKey(p.ID)).Val(); l != 1 {
		t.Fatalf("claimed list holds %d records, want 1", l)
	}
	if rc, _ := s.Redis.HGet(ctx, redpacket.MetaKey(p.ID), "remaining_cents").Int64(); rc != 200 {
		t.Fatalf("remaining_cents %d, want 200", rc)
	}
}
