package account

import (
	"context"
	"database/sql"
	"errors"

	"github.com/seckill/seckill/db"
)

// Locale is the language tag the account picked ("" when it has picked none).
func (s *Service) Locale(ctx context.Context, userID int64) (string, error) {
	var tag string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT locale FROM users WHERE id = ?`, userID).Scan(&tag)
	if errors.Is(err, sql.ErrNoRows) {
		return "", db.Errorf(db.ENOTFOUND, "user not found")
	}
	return tag, err
}

// SetLocale keeps the language tag the account picked. The caller checks
// that it is one the shop speaks.
func (s *Service) SetLocale(ctx context.Context, userID int64, tag string) error {
	if len(tag) > 16 {
		return db.Errorf(db.EINVALID, "locale: at most 16 characters")
	}
	_, err := s.SQL.W.ExecContext(ctx, `UPDATE users SET locale = ? WHERE id = ?`, tag, userID)
	return err
}
