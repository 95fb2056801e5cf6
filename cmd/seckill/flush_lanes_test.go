package main

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/db/sqldb"
)

// Two worker processes flush two items at once: each item's queue is a
// lane under a lease of its own. While one process is held inside item A's
// flush (the test locks goods A's row, so A's order insert waits on it,
// with A's lane lease held), the other process flushes item B's new orders
// into PostgreSQL; once A's row is free, A's order reaches it too, once.
func TestFlushTwoWorkersTwoItems(t *testing.T) {
	ctx := context.Background()
	h := sharedHosts(t, "two-worker flush test")
	web := h.start("web-1", ModeWeb)
	workers := map[string]*testApp{"serve-1": h.start("serve-1", ModeServe), "serve-2": h.start("serve-2", ModeServe)}
	store, err := sqldb.Open(ctx, h.db, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	merchant, _ := web.newMerchant()
	sl := web.createSlot(merchant, -time.Minute, time.Hour)
	a, b := web.createGoods(merchant, sl.ID, 100, 1), web.createGoods(merchant, sl.ID, 100, 1)
	durable := func(goodsID int64) int64 {
		var n int64
		if err := store.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders WHERE goods_id = ?`, goodsID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	grab := func(goodsID int64) {
		tok, _ := web.newUser()
		web.grab(tok, goodsID)
	}

	// Hold goods A's row: inserting an order of A checks its goods row.
	tx, err := store.W.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT id FROM goods WHERE id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	grab(a.ID)
	var holder string
	eventually(t, time.Minute, "a worker's flush of item A to wait on its goods row", func() bool {
		err := store.R.QueryRowContext(ctx, `SELECT application_name FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query ~ '^INSERT INTO orders ' LIMIT 1`).Scan(&holder)
		return err == nil
	})
	other := map[string]string{"serve-1": "serve-2", "serve-2": "serve-1"}[holder]
	if other == "" {
		t.Fatalf("the flush waiting on item A is %q's, want serve-1's or serve-2's", holder)
	}
	waits := workers[other].metric("seckill_flush_lease_waits_total")

	// Item B's orders, grabbed while the holder is inside item A's flush.
	for range 3 {
		grab(b.ID)
	}
	eventually(t, time.Minute, "item B's orders in PostgreSQL while item A's flush waits", func() bool { return durable(b.ID) == 3 })
	if n := durable(a.ID); n != 0 {
		t.Fatalf("%d orders of item A in PostgreSQL while its row is held", n)
	}
	var still string
	if err := store.R.QueryRowContext(ctx, `SELECT application_name FROM pg_stat_activity
		WHERE wait_event_type = 'Lock' AND query ~ '^INSERT INTO orders ' LIMIT 1`).Scan(&still); err != nil || still != holder {
		t.Fatalf("item A's flush no longer waits (%q, %v): item B was not flushed beside it", still, err)
	}
	eventually(t, time.Minute, other+" to skip item A's lane, held by "+holder, func() bool {
		return workers[other].metric("seckill_flush_lease_waits_total") > waits
	})
	t.Logf("%s flushed item B while %s was inside item A's flush", other, holder)

	tx.Rollback()
	eventually(t, time.Minute, "item A's order in PostgreSQL once its row is free", func() bool { return durable(a.ID) == 1 })
	var conflicts int64
	if err := store.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM order_conflicts WHERE goods_id IN (?, ?)`, a.ID, b.ID).Scan(&conflicts); err != nil || conflicts != 0 {
		t.Fatalf("%d orders refused (%v): applied twice", conflicts, err)
	}
}
