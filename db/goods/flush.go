package goods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"
	"github.com/seckill/seckill/db/model"
)

// FlushOrders moves every active goods' order records to SQLite through the
// crash-safe flush queue, then voids the orders the durable guard refused.
func (s *Service) FlushOrders(ctx context.Context) error {
	ids, err := s.activeGoods(ctx)
	if err != nil {
		return fmt.Errorf("list active goods: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if _, err := s.Flush(ctx, flushQueue(id), s.applyOrders(ctx, id)); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.voidConflicts(ctx))
	return errors.Join(errs...)
}

// applyOrders writes a batch of one goods' order records. It is idempotent:
// a record already applied (same or older version) changes nothing, so a
// batch replayed after a crash neither loses nor doubles an order.
func (s *Service) applyOrders(ctx context.Context, goodsID int64) func(tx *sql.Tx, recs []string) error {
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
		if st.update[table], err = tx.PrepareContext(ctx, `UPDATE `+table+` SET status = ?, updated_ms = ?, version = ? WHERE id = ? AND version < ?`); err != nil {
			st.close()
			return nil, err
		}
	}
	st.insert, err = tx.PrepareContext(ctx, `INSERT INTO orders (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
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
		_, err := st.update["orders"].ExecContext(ctx, o.Status, o.UpdatedAt.UnixMilli(), o.Version, o.ID, o.Version)
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
		_, err := st.update["order_conflicts"].ExecContext(ctx, o.Status, o.UpdatedAt.UnixMilli(), o.Version, o.ID, o.Version)
		return err
	}
	if inOrders || inConflicts {
		return s.recordConflict(ctx, tx, o, ConflictIDTaken)
	}
	_, err = st.insert.ExecContext(ctx, o.ID, o.GoodsID, o.UserID, o.Unit, o.AmountCents, o.Status,
		o.CreatedAt.UnixMilli(), o.ExpiresAt.UnixMilli(), o.UpdatedAt.UnixMilli(), o.Version)
	if isUniqueViolation(err) {
		return s.recordConflict(ctx, tx, o, ConflictUnitTaken)
	}
	return err
}

// recordConflict keeps an order the durable store refused, for the
// reconciliation view and for voidConflicts; the flush goes on.
func (s *Service) recordConflict(ctx context.Context, tx *sql.Tx, o *model.Order, reason string) error {
	s.Log.Warn("durable store refused an order from Redis", "order", o.ID, "goods", o.GoodsID, "unit", o.Unit, "reason", reason)
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO order_conflicts (id, goods_id, user_id, unit, amount_cents, status,
		created_ms, expires_ms, updated_ms, version, reason, detected_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		o.ID, o.GoodsID, o.UserID, o.Unit, o.AmountCents, o.Status, o.CreatedAt.UnixMilli(), o.ExpiresAt.UnixMilli(),
		o.UpdatedAt.UnixMilli(), o.Version, reason, s.Now().UnixMilli())
	return err
}

func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// voidConflicts ends, in Redis, the unpaid orders the durable guard refused:
// their unit was sold already, so the user must not pay for it. A paid one is
// left for the merchant to settle (it shows in the reconciliation view).
// It runs after each flush; a crash in between only delays it to the next.
func (s *Service) voidConflicts(ctx context.Context) error {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id FROM order_conflicts WHERE handled = 0 ORDER BY id LIMIT 500`)
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	err = rows.Err() // a read that broke off must not pass for the end of the list
	rows.Close()
	if err != nil {
		return err
	}
	for _, id := range ids {
		goodsID, seq, ok := SplitOrderID(id)
		if ok {
			res, err := voidScript.Run(ctx, s.Redis, scriptKeys(goodsID), seq, s.Now().UnixMilli()).Text()
			if err != nil {
				return fmt.Errorf("void order %d: %w", id, err)
			}
			if a, err := parseAnswer(goodsID, res); err == nil && a.code == "ok" {
				if o, err := parseOrderRecord(goodsID, a.rec); err == nil {
					s.pushStock(goodsID, a.slot, a.remaining)
					s.pushOrder(o)
				}
			}
		}
		if _, err := s.SQL.W.ExecContext(ctx, `UPDATE order_conflicts SET handled = 1 WHERE id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}
