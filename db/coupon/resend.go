package coupon

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// resendScript queues every grab record the template keeps per unit (the
// units hash) for the flush again, in the order of their units: the apply
// is idempotent (a coupon's ID comes from its unit, a conflict is keyed by
// its grab), so what the store holds changes nothing and what it lacks (a
// store restored from a backup older than Redis) is written again.
//
// KEYS[1] units hash, KEYS[2] pending flush queue
// Returns how many records it queued.
var resendScript = redis.NewScript(backend.RequeueLua + `
return requeue_hash(KEYS[2], KEYS[1])
`)

// templateIDs lists every template the store holds.
func (s *Service) templateIDs(ctx context.Context) ([]int64, error) {
	ids, err := sqldb.IDs(ctx, s.SQL.R, `SELECT id FROM coupons ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list coupon templates: %w", err)
	}
	return ids, nil
}

// ResendGrabs queues every coupon grab Redis keeps (resendScript) of every
// template the store holds for the flush again and returns how many it
// queued. After a restore of the store from a backup it brings back the
// coupons granted after the backup was taken; the next flush writes them.
func (s *Service) ResendGrabs(ctx context.Context) (int64, error) {
	ids, err := s.templateIDs(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	var errs []error
	for _, id := range ids {
		k, err := resendScript.Run(ctx, s.Redis, []string{unitsKey(id), grabQueue(id).Pending}).Int64()
		if err == nil && k > 0 {
			err = s.Redis.SAdd(ctx, queuesKey, id).Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resend the grabs of coupon %d: %w", id, err))
		}
		n += k
	}
	return n, errors.Join(errs...)
}

// RestoreUses marks used every coupon a paid order in the store was paid
// with that the store holds otherwise: a restored store lacks the uses made
// after its backup, which the orders Redis gave back again (ResendOrders)
// carry. It answers how many it marked.
func (s *Service) RestoreUses(ctx context.Context) (int64, error) {
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE user_coupons SET status = ?, order_id = o.id, used_ms = o.paid_at_ms
		FROM orders AS o
		WHERE o.user_coupon_id = user_coupons.id AND o.user_id = user_coupons.user_id AND o.status = ?
			AND user_coupons.status <> ?`, model.CouponUsed, model.OrderPaid, model.CouponUsed)
	if err != nil {
		return 0, fmt.Errorf("restore the uses of coupons: %w", err)
	}
	return res.RowsAffected()
}

// GrabsMissing counts, per template, the grabs Redis keeps that the store
// has neither as a coupon of their user nor as a refused grab: after a
// restore and ResendGrabs with its flush, none (the drift of coupons).
func (s *Service) GrabsMissing(ctx context.Context) (map[int64]int64, error) {
	ids, err := s.templateIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	for _, id := range ids {
		all, err := s.Redis.HGetAll(ctx, unitsKey(id)).Result()
		if err != nil {
			return nil, fmt.Errorf("read the grabs of coupon %d: %w", id, err)
		}
		if len(all) == 0 {
			continue
		}
		held := map[grabRecord]bool{}
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT id - ?, user_id, grabbed_ms FROM user_coupons WHERE coupon_id = ?
			UNION ALL SELECT unit, user_id, grabbed_ms FROM coupon_conflicts WHERE coupon_id = ?`, UserCouponID(id, 0), id, id)
		if err != nil {
			return nil, fmt.Errorf("read the coupons of template %d: %w", id, err)
		}
		for rows.Next() {
			var g grabRecord
			if err := rows.Scan(&g.unit, &g.user, &g.ms); err != nil {
				rows.Close()
				return nil, err
			}
			held[g] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for _, rec := range all {
			if g, ok := parseGrabRecord(rec); ok && !held[g] {
				out[id]++
			}
		}
	}
	return out, nil
}
