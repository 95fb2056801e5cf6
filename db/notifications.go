package db

import (
	"context"
	"time"
)

// Notification is one message in a user's in-app inbox.
type Notification struct {
	ID        int64     `json:"id"`
	Kind      string    `json:"kind"`
	CouponID  int64     `json:"coupon_id"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
	Read      bool      `json:"read"`
}

// NotificationEvent is the live event that carries a new notification to its user.
type NotificationEvent struct {
	Type         string        `json:"type"`
	Notification *Notification `json:"notification"`
}

// NotificationCouponReminder is the kind of a coupon reminder in the inbox.
const NotificationCouponReminder = "coupon_reminder"

// Notifications lists the user's latest notifications, newest first.
func (s *Store) Notifications(ctx context.Context, userID int64) ([]*Notification, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, kind, COALESCE(coupon_id, 0), message, created_at, read
		FROM notifications WHERE user_id = ? ORDER BY id DESC LIMIT 100`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Notification{}
	for rows.Next() {
		var n Notification
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
