// Package inbox is the in-app channel: each user's notifications, their
// unread count, and the insert other areas make inside their own
// transaction when they notify users.
package inbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// Service reads and marks users' inboxes.
type Service struct {
	*backend.Backend
}

// List returns the user's latest notifications, newest first.
func (s *Service) List(ctx context.Context, userID int64) ([]*model.Notification, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, kind, COALESCE(coupon_id, 0), COALESCE(goods_id, 0), message, created_ms, read
		FROM notifications WHERE user_id = ? ORDER BY id DESC LIMIT 100`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*model.Notification{}
	for rows.Next() {
		var n model.Notification
		var created int64
		if err := rows.Scan(&n.ID, &n.Kind, &n.CouponID, &n.GoodsID, &n.Message, &created, &n.Read); err != nil {
			return nil, err
		}
		n.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, &n)
	}
	return out, rows.Err()
}

// Unread counts the user's unread notifications.
func (s *Service) Unread(ctx context.Context, userID int64) (int, error) {
	var n int
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read = 0`, userID).Scan(&n)
	return n, err
}

// MarkRead marks every notification of the user read.
func (s *Service) MarkRead(ctx context.Context, userID int64) error {
	_, err := s.SQL.W.ExecContext(ctx, `UPDATE notifications SET read = 1 WHERE user_id = ? AND read = 0`, userID)
	return err
}

// addPerStatement bounds the rows of one insert (6 values each, well under
// either database's limit on parameters).
const addPerStatement = 1000

// Add puts n (its kind, coupon or goods, message and creation time) in each user's
// inbox within tx, in multi-row statements, and returns the stored
// notifications by user, each with its new ID.
func Add(ctx context.Context, tx *sql.Tx, users []int64, n model.Notification) (map[int64]model.Notification, error) {
	out := make(map[int64]model.Notification, len(users))
	if rehearsal, err := OfRehearsal(ctx, tx, n.GoodsID); err != nil || rehearsal {
		return out, err // a rehearsal's goods tell nobody's inbox
	}
	for start := 0; start < len(users); start += addPerStatement {
		chunk := users[start:min(start+addPerStatement, len(users))]
		var q strings.Builder
		q.WriteString(`INSERT INTO notifications (user_id, kind, coupon_id, goods_id, message, created_ms) VALUES `)
		args := make([]any, 0, 6*len(chunk))
		for i, uid := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?)")
			args = append(args, uid, n.Kind, n.CouponID, nullID(n.GoodsID), n.Message, n.CreatedAt.UnixMilli())
		}
		q.WriteString(` RETURNING user_id, id`)
		if err := addRows(ctx, tx, q.String(), args, n, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func addRows(ctx context.Context, tx *sql.Tx, q string, args []any, n model.Notification, out map[int64]model.Notification) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var uid int64
		m := n
		if err := rows.Scan(&uid, &m.ID); err != nil {
			return err
		}
		out[uid] = m
	}
	return rows.Err()
}

// Messages are the live events that carry each new notification to its user's sockets.
func Messages(byUser map[int64]model.Notification) []live.Message {
	out := make([]live.Message, 0, len(byUser))
	for uid, n := range byUser {
		ev, _ := json.Marshal(model.NotificationEvent{Type: "notification", Notification: &n})
		out = append(out, live.Message{Topic: live.TopicUser(uid), Event: ev})
	}
	return out
}

// nullID stores an absent goods as NULL.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// OfRehearsal reports whether goodsID (0: none) is goods of a rehearsal
// slot, whose notifications never reach an inbox.
func OfRehearsal(ctx context.Context, tx *sql.Tx, goodsID int64) (bool, error) {
	if goodsID == 0 {
		return false, nil
	}
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM goods g JOIN slots s ON s.id = g.slot_id WHERE g.id = ? AND s.rehearsal = 1`, goodsID).Scan(&n)
	return n > 0, err
}
