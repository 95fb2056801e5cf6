package db

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/seckill/seckill/db/sqlite"
)

// NaiveBaseline is the grab as many simple systems do it: one SQLite
// transaction that decrements stock where it is positive and inserts the
// order. Only the load bench mounts it, as the reference ours must beat.
type NaiveBaseline struct{ SQL *sqlite.DB }

// naiveSchema lives outside the migrations: production never has these tables.
const naiveSchema = `
CREATE TABLE IF NOT EXISTS bench_naive_goods (id INTEGER PRIMARY KEY, stock INTEGER NOT NULL CHECK (stock >= 0));
CREATE TABLE IF NOT EXISTS bench_naive_orders (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	goods_id INTEGER NOT NULL,
	user_id INTEGER NOT NULL,
	UNIQUE (goods_id, user_id)
);`

// CreateGoods makes a naive goods row with the given stock and returns its ID.
func (n *NaiveBaseline) CreateGoods(ctx context.Context, stock int64) (int64, error) {
	if _, err := n.SQL.W.ExecContext(ctx, naiveSchema); err != nil {
		return 0, err
	}
	res, err := n.SQL.W.ExecContext(ctx, `INSERT INTO bench_naive_goods (stock) VALUES (?)`, stock)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// Grab takes one unit for the user in one transaction (limit one per user).
func (n *NaiveBaseline) Grab(ctx context.Context, userID, goodsID int64) (orderID int64, err error) {
	err = n.SQL.Tx(ctx, func(tx *sql.Tx) error {
		var dup int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM bench_naive_orders WHERE goods_id = ? AND user_id = ?`, goodsID, userID).Scan(&dup); err != nil {
			return err
		} else if dup > 0 {
			return ErrLimitReached
		}
		res, err := tx.ExecContext(ctx, `UPDATE bench_naive_goods SET stock = stock - 1 WHERE id = ? AND stock > 0`, goodsID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrSoldOut
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO bench_naive_orders (goods_id, user_id) VALUES (?, ?)`, goodsID, userID)
		if err != nil {
			return err
		}
		orderID, err = res.LastInsertId()
		return err
	})
	return orderID, err
}

// Counts returns the naive goods' stock left and its orders, for the invariants.
func (n *NaiveBaseline) Counts(ctx context.Context, goodsID int64) (stock, orders, maxPerUser int64, err error) {
	if err = n.SQL.R.QueryRowContext(ctx, `SELECT stock FROM bench_naive_goods WHERE id = ?`, goodsID).Scan(&stock); err != nil {
		return 0, 0, 0, fmt.Errorf("naive goods %d: %w", goodsID, err)
	}
	err = n.SQL.R.QueryRowContext(ctx, `SELECT COALESCE(SUM(c), 0), COALESCE(MAX(c), 0)
		FROM (SELECT COUNT(*) AS c FROM bench_naive_orders WHERE goods_id = ? GROUP BY user_id)`, goodsID).Scan(&orders, &maxPerUser)
	return stock, orders, maxPerUser, err
}
