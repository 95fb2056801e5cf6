// Package naive is the load bench's baselines. The grab as many simple
// systems do it: one transaction of the durable store (SQLite or
// PostgreSQL) that decrements stock where it is positive and inserts the
// order, served behind the same HTTP stack as ours. And the doors' floor:
// a grab that passes the goods grab's doors and is refused without the
// sale engine. Only the bench mounts them (Main.Naive), as the references
// ours is measured against; production code knows nothing of them.
package naive

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/web"
)

// Baseline is the naive grab over the process's durable store.
type Baseline struct{ SQL *sqldb.DB }

// naiveSchema lives outside the migrations: production never has these tables.
func naiveSchema(d sqldb.Dialect) string {
	return `
CREATE TABLE IF NOT EXISTS bench_naive_goods (id ` + d.IDColumn() + `, stock BIGINT NOT NULL CHECK (stock >= 0));
CREATE TABLE IF NOT EXISTS bench_naive_orders (
	id ` + d.IDColumn() + `,
	goods_id BIGINT NOT NULL,
	user_id BIGINT NOT NULL,
	UNIQUE (goods_id, user_id)
);`
}

// CreateGoods makes a naive goods row with the given stock and returns its ID.
func (n *Baseline) CreateGoods(ctx context.Context, stock int64) (id int64, err error) {
	if _, err := n.SQL.W.ExecContext(ctx, naiveSchema(n.SQL.Dialect)); err != nil {
		return 0, err
	}
	err = n.SQL.W.QueryRowContext(ctx, `INSERT INTO bench_naive_goods (stock) VALUES (?) RETURNING id`, stock).Scan(&id)
	return id, err
}

// Grab takes one unit for the user in one transaction (limit one per user).
func (n *Baseline) Grab(ctx context.Context, userID, goodsID int64) (orderID int64, err error) {
	err = n.SQL.Tx(ctx, func(tx *sql.Tx) error {
		var dup int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM bench_naive_orders WHERE goods_id = ? AND user_id = ?`, goodsID, userID).Scan(&dup); err != nil {
			return err
		} else if dup > 0 {
			return db.ErrLimitReached
		}
		res, err := tx.ExecContext(ctx, `UPDATE bench_naive_goods SET stock = stock - 1 WHERE id = ? AND stock > 0`, goodsID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return db.ErrSoldOut
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO bench_naive_orders (goods_id, user_id) VALUES (?, ?) RETURNING id`, goodsID, userID).Scan(&orderID)
		if sqldb.IsUniqueViolation(err) { // the same shopper's other grab committed first (PostgreSQL runs them side by side)
			return db.ErrLimitReached
		}
		return err
	})
	return orderID, err
}

// Counts returns the naive goods' stock left and its orders, for the invariants.
func (n *Baseline) Counts(ctx context.Context, goodsID int64) (stock, orders, maxPerUser int64, err error) {
	if err = n.SQL.R.QueryRowContext(ctx, `SELECT stock FROM bench_naive_goods WHERE id = ?`, goodsID).Scan(&stock); err != nil {
		return 0, 0, 0, fmt.Errorf("naive goods %d: %w", goodsID, err)
	}
	err = n.SQL.R.QueryRowContext(ctx, `SELECT COALESCE(SUM(c), 0), COALESCE(MAX(c), 0)
		FROM (SELECT COUNT(*) AS c FROM bench_naive_orders WHERE goods_id = ? GROUP BY user_id) AS per_user`, goodsID).Scan(&orders, &maxPerUser)
	return stock, orders, maxPerUser, err
}

// Routes mounts the baseline's grab on the API group,
// POST /api/bench/naive/{id}/grab, and the doors' floor,
// POST /api/bench/doors/{id}/grab.
func (n *Baseline) Routes(r web.Mount) {
	r.Open.Post("/bench/naive/:id/grab", n.grab)
	r.Open.Post("/bench/doors/:id/grab", r.Sale, r.Grab, doorsOnly)
}

// doorsOnly is the doors' floor: a grab that passes every door the goods
// grab passes (POST /api/goods/{id}/grab: the API's middleware, the paused
// sale, the grab rate limit), reads its goods ID as the goods grab does,
// and is refused sold out without asking the sale engine. Its answer is
// the sold-out refusal's, byte for byte, so the load bench can tell what
// a refusal costs beyond the doors every grab must pass.
func doorsOnly(c *fiber.Ctx) error {
	if _, _, err := callerAndGoods(c); err != nil {
		return err
	}
	return db.ErrSoldOut
}

// callerAndGoods is the signed-in caller and the goods ID of the path, read
// as the goods grab reads them.
func callerAndGoods(c *fiber.Ctx) (model.Claims, int64, error) {
	cl, ok := handlers.ClaimsOf(c)
	if !ok {
		return cl, 0, db.ErrUnauthorized
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return cl, 0, db.Errorf(db.EINVALID, "id must be a positive integer")
	}
	return cl, id, nil
}

// grab answers as the goods grab does: 201 with the order, or the error's code.
func (n *Baseline) grab(c *fiber.Ctx) error {
	cl, id, err := callerAndGoods(c)
	if err != nil {
		return err
	}
	orderID, err := n.Grab(c.UserContext(), cl.UserID, id)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"order": fiber.Map{"id": orderID, "goods_id": id, "user_id": cl.UserID}})
}
