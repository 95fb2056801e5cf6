package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/model"
)

// benchCoupon grabs a live coupon template over HTTP, then checks no
// oversell, nobody over the limit and SQLite equal to Redis after the flush.
func benchCoupon(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	now := time.Now().UTC()
	var created struct {
		Coupon struct {
			ID int64 `json:"id"`
		} `json:"coupon"`
	}
	if err := t.mustCall("POST", "/api/admin/coupons", t.admin, map[string]any{
		"title": "bench coupon", "kind": "amount_off", "value": 500, "min_spend_cents": 2000, "stock": o.Stock,
		"limit_per_user": 1, "grab_start_at": now.Add(-time.Minute), "grab_end_at": now.Add(2 * time.Hour),
	}, &created); err != nil {
		return nil, err
	}
	id := created.Coupon.ID
	return &scenario{name: "HTTP coupon grab",
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, fmt.Sprintf("/api/coupons/%d/grab", id), i, nil)
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			var st model.CouponStats
			if err := t.waitFlushed(ctx, fmt.Sprintf("/api/admin/coupons/%d/stats", id), &st, func() bool { return st.DB.Grabbed == st.Grabbed }); err != nil {
				return err
			}
			var perUser int64
			if err := t.Backend.SQL.R.QueryRowContext(ctx, `SELECT COALESCE(MAX(c), 0) FROM (SELECT COUNT(*) AS c FROM user_coupons WHERE coupon_id = ? GROUP BY user_id) AS per_user`, id).Scan(&perUser); err != nil {
				return err
			}
			ok := res.Codes["ok"]
			r.Checks = append(r.Checks,
				bench.Check{Name: "coupon: no oversell", OK: ok <= int64(o.Stock) && st.Grabbed == ok && st.Remaining+st.Grabbed == st.Stock, Detail: fmt.Sprintf("%d grabbed + %d left = stock %d", st.Grabbed, st.Remaining, st.Stock)},
				bench.Check{Name: "coupon: nobody over the limit", OK: perUser <= 1, Detail: fmt.Sprintf("most coupons by one user in SQLite: %d (limit 1)", perUser)},
				bench.Check{Name: "coupon: SQLite equals Redis after the flush", OK: st.DB.Grabbed == st.Grabbed, Detail: fmt.Sprintf("SQLite %d, Redis %d", st.DB.Grabbed, st.Grabbed)},
			)
			return nil
		},
	}, nil
}
