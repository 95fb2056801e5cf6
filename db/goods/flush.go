package goods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/model"
)

// FlushOrders moves every active goods' order records to SQLite through the
// crash-safe flush queue, then fails the orders the durable guard refused
// and flushes their goods again, so SQLite records the failures at once.
func (s *Service) FlushOrders(ctx context.Context) error {
	ids, err := s.activeGoods(ctx)
	if err != nil {
		return fmt.Errorf("list active goods: %w", err)
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.flushGoods(ctx, id))
	}
	voided, err := s.voidConflicts(ctx)
	errs = append(errs, err)
	for _, id := range voided { // active or not: a void's record must reach SQLite
		errs = append(errs, s.flushGoods(ctx, id))
	}
	return errors.Join(errs...)
}

// flushGoods moves one goods' order records to SQLite, then drops the orders
// that ended from their users' lists in Redis: SQLite now shows them, so My
// orders still does, and a list holds only live orders and those that ended
// since the last flush, however often its user grabs and cancels.
func (s *Service) flushGoods(ctx context.Context, goodsID int64) error {
	var done, batch endedOrders // of committed batches; of the batch being applied
	apply := s.applyOrders(ctx, goodsID, &batch)
	_, err := s.Flush(ctx, flushQueue(goodsID), func(tx *sql.Tx, recs []string) error {
		// Flush applies a batch only once the one before is committed and released.
		done.merge(batch)
		batch = endedOrders{}
		return apply(tx, recs)
	})
	if err == nil {
		done.merge(batch)
	}
	if len(done) > 0 {
		if terr := s.trimMine(ctx, goodsID, done); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	return err
}

// endedOrders are orders that ended (expired, cancelled or failed), as user
// ID → comma-separated sequences, in trimMineScript's terms.
type endedOrders map[string]string

func (e *endedOrders) add(o *model.Order) {
	if o.Status == model.OrderUnpaid || o.Status == model.OrderPaid {
		return
	}
	if *e == nil {
		*e = endedOrders{}
	}
	_, seq, _ := SplitOrderID(o.ID)
	uid, sq := strconv.FormatInt(o.UserID, 10), strconv.FormatInt(seq, 10)
	if old := (*e)[uid]; old != "" {
		sq = old + "," + sq
	}
	(*e)[uid] = sq
}

func (e *endedOrders) merge(o endedOrders) {
	for uid, seqs := range o {
		if *e == nil {
			*e = endedOrders{}
		}
		if old := (*e)[uid]; old != "" {
			seqs = old + "," + seqs
		}
		(*e)[uid] = seqs
	}
}

// trimMineScript drops ended orders from their users' lists (the mine hash).
// It runs once their final records are in SQLite; an order whose sequence
// holds a live order of the user again (a restore sent it back) stays.
//
// KEYS: scriptKeys
// ARGV: pairs of user ID and comma-separated sequences
// Returns how many sequences it dropped.
var trimMineScript = redis.NewScript(goodsLua + `
local dropped = 0
for i = 1, #ARGV, 2 do
	local uid, mine = ARGV[i], redis.call('HGET', K_MINE, ARGV[i])
	if mine then
		local drop = {}
		for seq in string.gmatch(ARGV[i + 1], '[^,]+') do
			local rec = redis.call('HGET', K_ORDERS, seq)
			local f = rec and split(rec)
			if not (f and f[2] == uid and (f[5] == 'unpaid' or f[5] == 'paid')) then drop[seq] = true end
		end
		local keep = {}
		for seq in string.gmatch(mine, '[^,]+') do
			if drop[seq] then dropped = dropped + 1 else keep[#keep + 1] = seq end
		end
		if #keep == 0 then
			redis.call('HDEL', K_MINE, uid)
		else
			redis.call('HSET', K_MINE, uid, table.concat(keep, ','))
		end
	end
end
return dropped
`)

func (s *Service) trimMine(ctx context.Context, goodsID int64, ended endedOrders) error {
	args := make([]any, 0, 2*len(ended))
	for uid, seqs := range ended {
		args = append(args, uid, seqs)
	}
	if err := trimMineScript.Run(ctx, s.Redis, scriptKeys(goodsID), args...).Err(); err != nil {
		return fmt.Errorf("trim the order lists of goods %d: %w", goodsID, err)
	}
	return nil
}

// applyOrders writes a batch of one goods' order records. It is idempotent:
// a record already applied (same or older version) changes nothing, so a
// batch replayed after a crash neither loses nor doubles an order. The
// orders the batch ends are added to ended, when given.
func (s *Service) applyOrders(ctx context.Context, goodsID int64, ended *endedOrders) func(tx *sql.Tx, recs []string) error {
	return func(tx *sql.Tx, recs []string) error {
		st, err := prepareOrderStmts(ctx, tx)
		if err != nil {
			return err
		}
		defer st.close()
		for _, rec := range recs {
			o, err := parseOrderRecord(goodsID, rec)
			if err != nil {
				// A record that cannot be read would block the queue forever; keep the rest moving.
				s.Log.Error("skipping unreadable order record", "goods", goodsID, "err", err)
				continue
			}
			if err := s.applyOrder(ctx, tx, st, o); err != nil {
				return fmt.Errorf("apply order %d: %w", o.ID, err)
			}
			if ended != nil {
				ended.add(o)
			}
		}
		return nil
	}
}

// orderStmts are the statements applyOrder runs, prepared once per batch
// rather than once per order.
type orderStmts struct {
	find   map[string]*sql.Stmt // table → select of an order's identity
	update map[string]*sql.Stmt // table → versioned status update
	insert *sql.Stmt
}

func prepareOrderStmts(ctx context.Context, tx *sql.Tx) (*orderStmts, error) {
	st := &orderStmts{find: map[string]*sql.Stmt{}, update: map[string]*sql.Stmt{}}
	var err error
	for _, table := range []string{"orders", "order_conflicts"} {
		if st.find[table], err = tx.PrepareContext(ctx, `SELECT user_id, unit, created_ms FROM `+table+` WHERE id = ?`); err != nil {
			st.close()
			return nil, err
		}
		if st.update[table], err = tx.PrepareContext(ctx, `UPDATE `+table+` SET status = ?, failure = ?, updated_ms = ?, version = ? WHERE id = ? AND version < ?`); err != nil {
			st.close()
			return nil, err
		}
	}
	st.insert, err = tx.PrepareContext(ctx, `INSERT INTO orders (`+orderTableColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *orderStmts) close() {
	for _, m := range []map[string]*sql.Stmt{st.find, st.update} {
		for _, s := range m {
			s.Close()
		}
	}
	if st.insert != nil {
		st.insert.Close()
	}
}

// Reasons an order lands in order_conflicts.
const (
	ConflictUnitTaken = "unit_taken" // another live order holds the unit: Redis sold it twice
	ConflictIDTaken   = "id_taken"   // another order has this ID: Redis's sequence went back
)

func (s *Service) applyOrder(ctx context.Context, tx *sql.Tx, st *orderStmts, o *model.Order) error {
	same := func(table string) (found, isSame bool, err error) {
		var user, unit, created int64
		err = st.find[table].QueryRowContext(ctx, o.ID).Scan(&user, &unit, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return false, false, nil
		} else if err != nil {
			return false, false, err
		}
		return true, user == o.UserID && unit == o.Unit && created == o.CreatedAt.UnixMilli(), nil
	}
	inOrders, sameOrder, err := same("orders")
	if err != nil {
		return err
	}
	if sameOrder {
		_, err := st.update["orders"].ExecContext(ctx, o.Status, o.Failure, o.UpdatedAt.UnixMilli(), o.Version, o.ID, o.Version)
		if isUniqueViolation(err) {
			return s.recordConflict(ctx, tx, o, ConflictUnitTaken)
		}
		return err
	}
	inConflicts, sameConflict, err := same("order_conflicts")
	if err != nil {
		return err
	}
	if sameConflict {
		_, err := st.update["order_conflicts"].ExecContext(ctx, o.Status, o.Failure, o.UpdatedAt.UnixMilli(), o.Version, o.ID, o.Version)
		return err
	}
	if inOrders || inConflicts {
		return s.recordConflict(ctx, tx, o, ConflictIDTaken)
	}
	_, err = st.insert.ExecContext(ctx, o.ID, o.GoodsID, o.UserID, o.Unit, o.AmountCents, o.Status,
		o.CreatedAt.UnixMilli(), o.ExpiresAt.UnixMilli(), o.UpdatedAt.UnixMilli(), o.Version, o.Failure)
	if isUniqueViolation(err) {
		return s.recordConflict(ctx, tx, o, ConflictUnitTaken)
	}
	return err
}

// recordConflict keeps an order the durable store refused, for the
// reconciliation view and for voidConflicts; the flush goes on.
func (s *Service) recordConflict(ctx context.Context, tx *sql.Tx, o *model.Order, reason string) error {
	s.Log.Warn("durable store refused an order from Redis", "order", o.ID, "goods", o.GoodsID, "unit", o.Unit, "reason", reason)
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO order_conflicts (`+orderTableColumns+`, reason, detected_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		o.ID, o.GoodsID, o.UserID, o.Unit, o.AmountCents, o.Status, o.CreatedAt.UnixMilli(), o.ExpiresAt.UnixMilli(),
		o.UpdatedAt.UnixMilli(), o.Version, o.Failure, reason, s.Now().UnixMilli())
	return err
}

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// voidConflicts fails the orders the durable guard refused, unpaid or paid:
// their unit was sold to an earlier order, so they must not hold it. Each
// fails in Redis (voidScript), or in SQLite alone when Redis no longer holds
// it, and its owner is told live; a paid one is owed a refund. It runs after
// each flush; a crash in between only delays it to the next. It returns the
// goods whose Redis it changed, whose records must be flushed now.
func (s *Service) voidConflicts(ctx context.Context) ([]int64, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+orderTableColumns+` FROM order_conflicts WHERE handled = 0 ORDER BY id LIMIT 500`)
	if err != nil {
		return nil, err
	}
	var refused []*model.Order
	for rows.Next() {
		var o model.Order
		var created, expires, updated int64
		if err := rows.Scan(&o.ID, &o.GoodsID, &o.UserID, &o.Unit, &o.AmountCents, &o.Status, &created, &expires, &updated,
			&o.Version, &o.Failure); err != nil {
			rows.Close()
			return nil, err
		}
		o.CreatedAt, o.ExpiresAt, o.UpdatedAt = msTime(created), msTime(expires), msTime(updated)
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
func (s *Service) voidConflict(ctx context.Context, c *model.Order) (bool, error) {
	goodsID, seq, ok := SplitOrderID(c.ID)
	if !ok || goodsID != c.GoodsID {
		_, err := s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET handled = 1 WHERE id = ?`, c.ID)
		return false, err
	}
	now := s.Now()
	res, err := voidScript.Run(ctx, s.Redis, scriptKeys(goodsID), seq, now.UnixMilli(), c.UserID, c.Unit, c.CreatedAt.UnixMilli()).Text()
	if err != nil {
		return false, fmt.Errorf("void order %d: %w", c.ID, err)
	}
	a, err := parseAnswer(goodsID, res)
	if err != nil {
		return false, err
	}
	changed := false
	switch a.code {
	case "ok":
		o, err := parseOrderRecord(goodsID, a.rec)
		if err != nil {
			return false, err
		}
		changed = true
		s.tellFailure(o) // the stock is as it was: the unit stays with the earlier order
	case "not_found", "other":
		// Redis no longer holds the order (it lost it, or an order before
		// 0010 left paid): it can change nowhere else, so it fails here.
		if c.Status == model.OrderUnpaid || c.Status == model.OrderPaid {
			c.Failure = model.FailureSoldTwice
			if c.Status == model.OrderPaid {
				c.Failure = model.FailureRefundDue
			}
			c.Status, c.UpdatedAt, c.Version = model.OrderFailed, now.UTC().Truncate(time.Millisecond), c.Version+1
			if _, err := s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET status = ?, failure = ?, updated_ms = ?, version = ?, handled = 1
				WHERE id = ? AND handled = 0`, c.Status, c.Failure, c.UpdatedAt.UnixMilli(), c.Version, c.ID); err != nil {
				return false, err
			}
			s.tellFailure(c)
			return false, nil
		}
	}
	_, err = s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET handled = 1 WHERE id = ?`, c.ID)
	return changed, err
}

// tellFailure sends the owner of a refused order its failure; one paid is owed a refund.
func (s *Service) tellFailure(o *model.Order) {
	if o.Failure == model.FailureRefundDue {
		s.Log.Warn("a paid order failed: its unit had been sold already; refund due",
			"order", o.ID, "goods", o.GoodsID, "user", o.UserID, "amount_cents", o.AmountCents)
	}
	s.pushOrder(o)
}
