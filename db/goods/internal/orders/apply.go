package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// The flush apply: how a batch of one goods' order records is written to
// the store under the durable unit guard (applyOrders), and what it does
// with an order the guard refuses.

// Reasons an order lands in order_conflicts.
const (
	ConflictUnitTaken = "unit_taken" // another live order holds the unit: Redis sold it twice
	ConflictIDTaken   = "id_taken"   // another order has this ID: Redis's sequence went back
)

// orderBatchTable is the staged batch of order records: per column, its name,
// its type and how a staged order (an order's row, and pos, the place of
// its first record in the batch) fills it. The row's places come from here,
// so a column added is staged and read in one place.
var orderBatchTable = []struct {
	sqldb.Column
	value func(o *stagedOrder) any
}{
	{sqldb.Column{Name: "id", Type: "BIGINT"}, func(o *stagedOrder) any { return o.ID }},
	{sqldb.Column{Name: "goods_id", Type: "BIGINT"}, func(o *stagedOrder) any { return o.GoodsID }},
	{sqldb.Column{Name: "user_id", Type: "BIGINT"}, func(o *stagedOrder) any { return o.UserID }},
	{sqldb.Column{Name: "unit", Type: "BIGINT"}, func(o *stagedOrder) any { return o.Unit }},
	{sqldb.Column{Name: "amount_cents", Type: "BIGINT"}, func(o *stagedOrder) any { return o.AmountCents }},
	{sqldb.Column{Name: "status", Type: "TEXT"}, func(o *stagedOrder) any { return o.Status }},
	{sqldb.Column{Name: "created_ms", Type: "BIGINT"}, func(o *stagedOrder) any { return o.CreatedAt.UnixMilli() }},
	{sqldb.Column{Name: "expires_ms", Type: "BIGINT"}, func(o *stagedOrder) any { return o.ExpiresAt.UnixMilli() }},
	{sqldb.Column{Name: "updated_ms", Type: "BIGINT"}, func(o *stagedOrder) any { return o.UpdatedAt.UnixMilli() }},
	{sqldb.Column{Name: "version", Type: "BIGINT"}, func(o *stagedOrder) any { return o.Version }},
	{sqldb.Column{Name: "failure", Type: "TEXT"}, func(o *stagedOrder) any { return o.Failure }},
	{sqldb.Column{Name: "discount_cents", Type: "BIGINT"}, func(o *stagedOrder) any { return o.DiscountCents }},
	{sqldb.Column{Name: "paid_cents", Type: "BIGINT"}, func(o *stagedOrder) any { return o.PaidCents }},
	{sqldb.Column{Name: "user_coupon_id", Type: "BIGINT"}, func(o *stagedOrder) any { return o.UserCouponID }},
	{sqldb.Column{Name: "paid_at_ms", Type: "BIGINT"}, func(o *stagedOrder) any { return unixMilliOr0(o.PaidAt) }},
	{sqldb.Column{Name: "refunded_ms", Type: "BIGINT"}, func(o *stagedOrder) any { return unixMilliOr0(o.RefundedAt) }},
	{sqldb.Column{Name: "pos", Type: "BIGINT"}, func(o *stagedOrder) any { return o.pos }},
}

// stagedOrder is an order of a staged batch and the place of its first record.
type stagedOrder struct {
	*model.Order
	pos int64
}

func unixMilliOr0(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UnixMilli()
}

// orderBatchColumns are orderBatchTable's columns; batchVersion and batchPos
// the places of the version and of pos in its rows.
var (
	orderBatchColumns = func() []sqldb.Column {
		cols := make([]sqldb.Column, len(orderBatchTable))
		for i, c := range orderBatchTable {
			cols[i] = c.Column
		}
		return cols
	}()
	batchVersion = orderBatchPlace("version")
	batchPos     = orderBatchPlace("pos")
)

func orderBatchPlace(name string) int {
	for i, c := range orderBatchTable {
		if c.Name == name {
			return i
		}
	}
	panic("orderBatchTable has no column " + name)
}

// orderSetColumns are what a newer record of an order sets in the store;
// orderSet sets them from the staged batch b.
var (
	orderSetColumns = []string{"status", "failure", "updated_ms", "version",
		"discount_cents", "paid_cents", "user_coupon_id", "paid_at_ms", "refunded_ms"}
	orderSet = setColumns(func(c string) string { return "b." + c })
)

// setColumns is the SET list of orderSetColumns, each from value(column).
func setColumns(value func(column string) string) string {
	set := make([]string, len(orderSetColumns))
	for i, c := range orderSetColumns {
		set[i] = c + " = " + value(c)
	}
	return strings.Join(set, ", ")
}

// SQL pieces of the apply: a row of table t that is the staged order b (the
// same ID, user, unit and grab time; its state may differ), and live states.
const (
	sameOrder = `%[1]s.id = b.id AND %[1]s.user_id = b.user_id AND %[1]s.unit = b.unit AND %[1]s.created_ms = b.created_ms`
	liveState = `('unpaid', 'paid')`
)

// The statements of applyOrders, in the order they run over the staged batch b.
var (
	// An order the store holds takes its newer state, unless that state
	// would make it hold its unit again (revived below, one at a time).
	updateOrders = `UPDATE orders SET ` + orderSet + `
		FROM order_batch AS b
		WHERE ` + fmt.Sprintf(sameOrder, "orders") + ` AND orders.version < b.version
			AND (orders.status IN ` + liveState + ` OR b.status NOT IN ` + liveState + `)`
	// Ended orders whose newer state holds the unit again: there is no such
	// change in Redis's rules, but a restore can bring one.
	findRevivals = `SELECT b.id, b.pos FROM order_batch AS b JOIN orders ON ` + fmt.Sprintf(sameOrder, "orders") + `
		WHERE orders.version < b.version AND b.status IN ` + liveState + ` AND orders.status NOT IN ` + liveState + `
		ORDER BY b.pos`
	// One revival, taken only while no other live order holds the unit.
	reviveOrder = `UPDATE orders SET ` + orderSet + `
		FROM order_batch AS b
		WHERE b.pos = ? AND ` + fmt.Sprintf(sameOrder, "orders") + ` AND orders.version < b.version
			AND NOT EXISTS (SELECT 1 FROM orders AS o WHERE o.goods_id = orders.goods_id AND o.unit = orders.unit AND o.status IN ` + liveState + `)`
	// A refused order takes its newer state where it was kept.
	updateConflicts = `UPDATE order_conflicts SET ` + orderSet + `
		FROM order_batch AS b
		WHERE ` + fmt.Sprintf(sameOrder, "order_conflicts") + ` AND order_conflicts.version < b.version
			AND NOT EXISTS (SELECT 1 FROM orders AS o WHERE ` + fmt.Sprintf(sameOrder, "o") + `)`
	// New orders, in the order Redis took them; the live unit index (and
	// the ID) skip the ones a unit or ID already held refuses.
	insertOrders = `INSERT INTO orders (` + orderTableColumns + `)
		SELECT ` + orderTableColumns + ` FROM order_batch AS b
		WHERE NOT EXISTS (SELECT 1 FROM orders AS o WHERE o.id = b.id) AND NOT EXISTS (SELECT 1 FROM order_conflicts AS c WHERE c.id = b.id)
		ORDER BY b.pos
		ON CONFLICT DO NOTHING`
	// Whatever is in neither table now was refused: kept with its reason.
	recordRefused = `INSERT INTO order_conflicts (` + orderTableColumns + `, reason, detected_ms)
		SELECT ` + orderTableColumns + `,
			CASE WHEN EXISTS (SELECT 1 FROM orders AS o WHERE o.id = b.id) OR EXISTS (SELECT 1 FROM order_conflicts AS c WHERE c.id = b.id)
				THEN '` + ConflictIDTaken + `' ELSE '` + ConflictUnitTaken + `' END, ?
		FROM order_batch AS b
		WHERE NOT EXISTS (SELECT 1 FROM orders AS o WHERE ` + fmt.Sprintf(sameOrder, "o") + `)
			AND NOT EXISTS (SELECT 1 FROM order_conflicts AS c WHERE ` + fmt.Sprintf(sameOrder, "c") + `)
		ORDER BY b.pos
		ON CONFLICT DO NOTHING
		RETURNING id, unit, reason`
	// The live orders of the store holding a unit a new order of the batch
	// was refused: each may have ended in Redis, its end still queued in
	// another bucket's lane (the unit was given back there and sold again
	// from this one).
	findHolders = `SELECT DISTINCT o.id, o.user_id, o.unit, o.created_ms, o.version FROM order_batch AS b
		JOIN orders AS o ON o.goods_id = b.goods_id AND o.unit = b.unit AND o.id <> b.id AND o.status IN ` + liveState + `
		WHERE b.status IN ` + liveState + ` AND NOT EXISTS (SELECT 1 FROM orders AS x WHERE x.id = b.id)
			AND NOT EXISTS (SELECT 1 FROM order_conflicts AS c WHERE c.id = b.id)`
	// A holder's end, from Redis, ahead of its own lane; that lane's record
	// then changes nothing (its version is not newer).
	releaseHolder = `UPDATE orders SET ` + setColumns(func(string) string { return "?" }) + `
		WHERE id = ? AND user_id = ? AND unit = ? AND created_ms = ? AND version < ? AND status IN ` + liveState
	// A revival the unit guard refused.
	recordRefusedRevival = `INSERT INTO order_conflicts (` + orderTableColumns + `, reason, detected_ms)
		SELECT ` + orderTableColumns + `, '` + ConflictUnitTaken + `', ? FROM order_batch AS b WHERE b.pos = ?
		ON CONFLICT DO NOTHING`
)

// applyOrders writes a batch of one goods' order records with set-based
// statements over the staged batch, under the durable unit guard: an order
// holds its unit only while no other live order does; one Redis sold twice
// (or under an ID another order has) is kept in order_conflicts, for the
// reconciliation view and for voidConflicts. No statement fails on a
// duplicate (on PostgreSQL that would end the transaction): the unit and ID
// indexes skip it with ON CONFLICT DO NOTHING, and what is left over is the
// refused. It is idempotent: a record already applied (same or older
// version) changes nothing, so a batch replayed after a crash neither loses
// nor doubles an order. The orders the batch ends are added to ended, when given.
func (s *Ledger) applyOrders(ctx context.Context, goodsID int64, ended *endedOrders) func(tx *sql.Tx, recs []string) error {
	return func(tx *sql.Tx, recs []string) error {
		rows := s.orderBatch(goodsID, recs, ended)
		if len(rows) == 0 {
			return nil
		}
		if err := s.SQL.Stage(ctx, tx, "order_batch", orderBatchColumns, rows); err != nil {
			return err
		}
		// Steps with nothing to do are left out: a record at version 1 is
		// an order's first, so only later ones can update a stored order;
		// only those an update did not take can be a revival or a refused
		// order's; and when every row is applied, none is refused.
		applied, later := int64(0), int64(0)
		for _, r := range rows {
			if r[batchVersion].(int64) > 1 {
				later++
			}
		}
		if later > 0 {
			res, err := tx.ExecContext(ctx, updateOrders)
			if err != nil {
				return fmt.Errorf("update orders of goods %d: %w", goodsID, err)
			}
			n, _ := res.RowsAffected()
			applied += n
			if n < later {
				if err := s.reviveOrders(ctx, tx, goodsID); err != nil {
					return err
				}
				if res, err = tx.ExecContext(ctx, updateConflicts); err != nil {
					return fmt.Errorf("update refused orders of goods %d: %w", goodsID, err)
				}
				n, _ = res.RowsAffected()
				applied += n
			}
		}
		n, err := insert(ctx, tx, goodsID)
		if err != nil {
			return err
		}
		if applied+n < int64(len(rows)) {
			// A refused order may meet a holder whose end is still queued
			// in another lane: that end is applied first, and the order again.
			released, err := s.releaseHolders(ctx, tx, goodsID)
			if err != nil {
				return err
			}
			if released > 0 {
				more, err := insert(ctx, tx, goodsID)
				if err != nil {
					return err
				}
				n += more
			}
		}
		if applied+n == int64(len(rows)) {
			return nil
		}
		refused, err := tx.QueryContext(ctx, recordRefused, s.Now().UnixMilli())
		if err != nil {
			return fmt.Errorf("record refused orders of goods %d: %w", goodsID, err)
		}
		defer refused.Close()
		for refused.Next() {
			var id, unit int64
			var reason string
			if err := refused.Scan(&id, &unit, &reason); err != nil {
				return err
			}
			s.Log.Warn("durable store refused an order from Redis", "order", id, "goods", goodsID, "unit", unit, "reason", reason)
		}
		return refused.Err()
	}
}

// insert runs insertOrders and answers how many orders it inserted.
func insert(ctx context.Context, tx *sql.Tx, goodsID int64) (int64, error) {
	res, err := tx.ExecContext(ctx, insertOrders)
	if err != nil {
		return 0, fmt.Errorf("insert orders of goods %d: %w", goodsID, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// releaseHolders brings to the store the end of each live order holding a
// unit the batch's new orders were refused, where Redis has it ended: the
// unit was given back in the holder's bucket and sold again from another,
// and the holder's lane has not flushed its end yet. Applying that end
// first (at Redis's newer version; the lane's own record is then a no-op)
// is where applying the lanes in Redis's order would leave the store, so the
// new order is kept and never voided for a sale Redis made once. A holder
// Redis still has live, or has lost, stays: that order was sold twice. It
// answers how many holders it released.
func (s *Ledger) releaseHolders(ctx context.Context, tx *sql.Tx, goodsID int64) (int, error) {
	rows, err := tx.QueryContext(ctx, findHolders)
	if err != nil {
		return 0, fmt.Errorf("find the holders of refused units of goods %d: %w", goodsID, err)
	}
	type holder struct{ id, user, unit, created, version int64 }
	var hs []holder
	for rows.Next() {
		var h holder
		if err := rows.Scan(&h.id, &h.user, &h.unit, &h.created, &h.version); err != nil {
			rows.Close()
			return 0, err
		}
		hs = append(hs, h)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, err
	}
	released := 0
	for _, h := range hs {
		_, seq, ok := sale.SplitOrderID(h.id)
		if !ok {
			continue
		}
		b, err := s.orderBucket(ctx, goodsID, seq)
		if err != nil {
			return released, err
		}
		rec, err := s.Redis.HGet(ctx, sale.OrdersKey(b), strconv.FormatInt(seq, 10)).Result()
		if errors.Is(err, redis.Nil) {
			continue
		} else if err != nil {
			return released, fmt.Errorf("read order %d: %w", h.id, err)
		}
		o, err := sale.ParseOrderRecord(goodsID, rec)
		if err != nil {
			return released, err
		}
		if o.UserID != h.user || o.Unit != h.unit || o.CreatedAt.UnixMilli() != h.created || o.Version <= h.version ||
			o.Status == model.OrderUnpaid || o.Status == model.OrderPaid {
			continue
		}
		st := stagedOrder{Order: o}
		args := make([]any, 0, len(orderSetColumns)+5)
		for _, c := range orderSetColumns {
			args = append(args, orderBatchTable[orderBatchPlace(c)].value(&st))
		}
		args = append(args, h.id, h.user, h.unit, h.created, o.Version)
		res, err := tx.ExecContext(ctx, releaseHolder, args...)
		if err != nil {
			return released, fmt.Errorf("release order %d: %w", h.id, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			released++
		}
	}
	return released, nil
}

// orderBatch reads a batch's records into staged rows: one per order (an
// ID, user, unit and grab time) at the newest state the batch holds, which
// is where applying its records one by one would leave it.
func (s *Ledger) orderBatch(goodsID int64, recs []string, ended *endedOrders) [][]any {
	type identity struct{ id, user, unit, created int64 }
	at := map[identity]int{}
	var rows [][]any
	for _, rec := range recs {
		o, err := sale.ParseOrderRecord(goodsID, rec)
		if err != nil {
			// A record that cannot be read would block the queue forever; keep the rest moving.
			s.Log.Error("skipping unreadable order record", "goods", goodsID, "err", err)
			continue
		}
		if ended != nil {
			ended.add(o)
		}
		st := stagedOrder{o, int64(len(rows))}
		row := make([]any, len(orderBatchTable))
		for i, c := range orderBatchTable {
			row[i] = c.value(&st)
		}
		key := identity{o.ID, o.UserID, o.Unit, o.CreatedAt.UnixMilli()}
		if i, ok := at[key]; !ok {
			at[key] = len(rows)
			rows = append(rows, row)
		} else if o.Version > rows[i][batchVersion].(int64) {
			row[batchPos] = rows[i][batchPos] // keeps the place of the order's first record
			rows[i] = row
		}
	}
	return rows
}

// reviveOrders applies, one at a time and in batch order, the newer states
// that would make an ended order hold its unit again: each takes the unit
// only if no other live order holds it, and is refused (kept in
// order_conflicts) otherwise. The batch of a healthy Redis has none.
func (s *Ledger) reviveOrders(ctx context.Context, tx *sql.Tx, goodsID int64) error {
	rows, err := tx.QueryContext(ctx, findRevivals)
	if err != nil {
		return fmt.Errorf("find revived orders of goods %d: %w", goodsID, err)
	}
	type revival struct{ id, pos int64 }
	var rs []revival
	for rows.Next() {
		var r revival
		if err := rows.Scan(&r.id, &r.pos); err != nil {
			rows.Close()
			return err
		}
		rs = append(rs, r)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	for _, r := range rs {
		res, err := tx.ExecContext(ctx, reviveOrder, r.pos)
		if err != nil {
			return fmt.Errorf("revive order %d: %w", r.id, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			continue
		}
		s.Log.Warn("durable store refused an order from Redis", "order", r.id, "goods", goodsID, "reason", ConflictUnitTaken)
		if _, err := tx.ExecContext(ctx, recordRefusedRevival, s.Now().UnixMilli(), r.pos); err != nil {
			return fmt.Errorf("record refused order %d: %w", r.id, err)
		}
	}
	return nil
}

// voidConflicts fails the orders the durable guard refused, unpaid or paid:
// their unit was sold to an earlier order, so they must not hold it. Each
// fails in Redis (voidScript), or in the store alone when Redis no longer holds
// it, and its owner is told live; a paid one is owed a refund. It runs after
// each flush; a crash in between only delays it to the next. Workers run it
// side by side (their flushes take different lanes): a refused order fails
// in Redis once (a second void finds it closed), and is told once. It
// returns the goods whose Redis it changed, whose records must be flushed now.
func (s *Ledger) voidConflicts(ctx context.Context) ([]int64, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+orderTableColumns+` FROM order_conflicts WHERE handled = 0 ORDER BY id LIMIT 500`)
	if err != nil {
		return nil, err
	}
	var refused []*model.Order
	for rows.Next() {
		var o model.Order
		var created, expires, updated, paidCents, paidAt, refundedAt int64
		if err := rows.Scan(&o.ID, &o.GoodsID, &o.UserID, &o.Unit, &o.AmountCents, &o.Status, &created, &expires, &updated,
			&o.Version, &o.Failure, &o.DiscountCents, &paidCents, &o.UserCouponID, &paidAt, &refundedAt); err != nil {
			rows.Close()
			return nil, err
		}
		o.CreatedAt, o.ExpiresAt, o.UpdatedAt = sale.MsTime(created), sale.MsTime(expires), sale.MsTime(updated)
		sale.FillPaid(&o, paidAt, refundedAt)
		refused = append(refused, &o)
	}
	err = rows.Err() // a read that broke off must not pass for the end of the list
	rows.Close()
	if err != nil {
		return nil, err
	}
	var voided []int64
	for _, o := range refused {
		changed, err := s.voidConflict(ctx, o)
		if err != nil {
			return voided, err
		}
		if changed && !slices.Contains(voided, o.GoodsID) {
			voided = append(voided, o.GoodsID)
		}
	}
	return voided, nil
}

// voidConflict fails one refused order and marks its conflict handled; it
// reports whether it changed Redis.
func (s *Ledger) voidConflict(ctx context.Context, c *model.Order) (bool, error) {
	goodsID, seq, ok := sale.SplitOrderID(c.ID)
	if !ok || goodsID != c.GoodsID {
		_, err := s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET handled = 1 WHERE id = ?`, c.ID)
		return false, err
	}
	now := s.Now()
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return false, err
	}
	res, err := voidScript.Run(ctx, s.Redis, sale.ScriptKeys(b), seq, now.UnixMilli(), c.UserID, c.Unit, c.CreatedAt.UnixMilli()).Text()
	if err != nil {
		return false, fmt.Errorf("void order %d: %w", c.ID, err)
	}
	a, err := sale.ParseAnswer(goodsID, res)
	if err != nil {
		return false, err
	}
	changed := false
	switch a.Code {
	case "ok":
		o, err := sale.ParseOrderRecord(goodsID, a.Rec)
		if err != nil {
			return false, err
		}
		changed = true
		s.tellFailure(ctx, o) // the stock is as it was: the unit stays with the earlier order
	case "not_found", "other":
		// Redis no longer holds the order (it lost it, or an order before
		// 0010 left paid): it can change nowhere else, so it fails here.
		if c.Status == model.OrderUnpaid || c.Status == model.OrderPaid {
			c.Failure = model.FailureSoldTwice
			if c.Status == model.OrderPaid {
				c.Failure = model.FailureRefundDue
			}
			c.Status, c.UpdatedAt, c.Version = model.OrderFailed, now.UTC().Truncate(time.Millisecond), c.Version+1
			res, err := s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET status = ?, failure = ?, updated_ms = ?, version = ?, handled = 1
				WHERE id = ? AND handled = 0`, c.Status, c.Failure, c.UpdatedAt.UnixMilli(), c.Version, c.ID)
			if err != nil {
				return false, err
			}
			if n, _ := res.RowsAffected(); n == 1 { // workers flush side by side: the one that marked it tells
				s.tellFailure(ctx, c)
			}
			return false, nil
		}
	}
	_, err = s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET handled = 1 WHERE id = ?`, c.ID)
	return changed, err
}

// tellFailure sends the owner of a refused order its failure, live and in
// the inbox; one paid is owed a refund.
func (s *Ledger) tellFailure(ctx context.Context, o *model.Order) {
	if o.Failure == model.FailureRefundDue {
		s.Log.Warn("a paid order failed: its unit had been sold already; refund due",
			"order", o.ID, "goods", o.GoodsID, "user", o.UserID, "amount_cents", o.AmountCents)
	}
	s.PushOrder(o)
	var told map[int64]model.Notification
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) (err error) {
		told, err = notifyFailed(ctx, tx, o, s.Now())
		return err
	})
	if err == nil {
		err = s.Events.PublishAll(ctx, inbox.Messages(told))
	}
	if err != nil {
		s.Log.Warn("tell a failed order's shopper in the inbox", "order", o.ID, "err", err) // the live event and My orders have it
	}
}
