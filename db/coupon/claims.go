package coupon

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/db/model"
)

// Claims lists who grabbed the template, newest first, for its merchant
// (another merchant's template is not found): its queued grabs are flushed
// first, so a coupon grabbed a moment ago is listed.
func (s *Service) Claims(ctx context.Context, actor model.Claims, couponID int64) (*model.Coupon, []model.CouponClaim, error) {
	c, err := s.owned(ctx, actor, couponID)
	if err != nil {
		return nil, nil, err
	}
	if err := s.flushTemplate(ctx, couponID); err != nil {
		return nil, nil, err
	}
	query := `SELECT u.id, u.user_id, COALESCE(a.username, ''), u.status, u.grabbed_ms, u.valid_until_ms, u.order_id
		FROM user_coupons u LEFT JOIN users a ON a.id = u.user_id WHERE u.coupon_id = ?`
	rows, err := s.SQL.R.QueryContext(ctx, query+` ORDER BY u.grabbed_ms DESC, u.id DESC`, couponID)
	if err != nil {
		return nil, nil, fmt.Errorf("claims of coupon %d: %w", couponID, err)
	}
	defer rows.Close()
	now := s.Now()
	out := []model.CouponClaim{}
	for rows.Next() {
		var cl model.CouponClaim
		var grabbed, until int64
		if err := rows.Scan(&cl.UserCouponID, &cl.UserID, &cl.Username, &cl.Status, &grabbed, &until, &cl.OrderID); err != nil {
			return nil, nil, err
		}
		cl.GrabbedAt, cl.ValidUntil = time.UnixMilli(grabbed).UTC(), time.UnixMilli(until).UTC()
		if cl.Status == model.CouponUnused && !now.Before(cl.ValidUntil) {
			cl.Status = model.CouponExpired // as the shopper's list shows it before the expiry runs
		}
		out = append(out, cl)
	}
	return c, out, rows.Err()
}
