package db

import (
	"context"
	"time"

	"github.com/seckill/seckill/db/model"
)

// Notifications lists the user's latest notifications, newest first.
func (s *Store) Notifications(ctx context.Context, userID int64) ([]*model.Notification, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, kind, COALESCE(coupon_id, 0), message, created_at, read
		FROM notifications WHERE user_id = ? ORDER BY id DESC LIMIT 100`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*model.Notification{}
	for rows.Next() {
		var n model.Notification
		var created string
		if err := rows.Scan(&n.ID, &n.Kind, &n.CouponID, &n.Message, &created, &n.Read); err != nil {
			return nil, err
		}
		n.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
		out = append(out, &n)
	}
	return out, rows.Err()
}

// UnreadNotifications counts the user's unread notifications.
func (s *Store) UnreadNotifications(ctx context.Context, userID int64) (int, error) {
	var n int
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read = 0`, userID).Scan(&n)
	return n, err
}

// MarkNotificationsRead marks every notification of the user read.
func (s *Store) MarkNotificationsRead(ctx context.Context, userID int64) error {
	_, err := s.SQL.W.ExecContext(ctx, `UPDATE notifications SET read = 1 WHERE user_id = ? AND read = 0`, userID)
	return err
}
