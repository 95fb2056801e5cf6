package account

import (
	"context"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Users lists the accounts, staff first (admins, then merchants), then the
// newest shoppers; only an admin may.
func (s *Service) Users(ctx context.Context, by model.Claims, limit int) ([]model.User, error) {
	if by.Role != model.RoleAdmin {
		return nil, db.ErrForbidden
	}
	if limit <= 0 || limit > 500 {
		limit = 200
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, username, role, created_ms FROM users
		ORDER BY CASE role WHEN 'admin' THEN 0 WHEN 'merchant' THEN 1 ELSE 2 END, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.User{}
	for rows.Next() {
		var u model.User
		var created int64
		if err := rows.Scan(&u.ID, &u.Username, &u.Role, &created); err != nil {
			return nil, err
		}
		u.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}
