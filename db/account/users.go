package account

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
	"golang.org/x/crypto/bcrypt"
)

// CreateUser adds an account; a taken username is a conflict.
func (s *Service) CreateUser(ctx context.Context, username, password, role string) (*model.User, error) {
	if err := ValidateCredentials(username, password); err != nil {
		return nil, err
	}
	if p := roleProblem(role); p != "" {
		return nil, db.FieldErrorf("role", "%s", p)
	}
	hash, err := s.Hashes.Generate(ctx, password, s.bcryptCost())
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err) // a full pool stays unavailable through the wrap
	}
	u := &model.User{Username: username, Role: role, CreatedAt: time.UnixMilli(s.Now().UnixMilli()).UTC()}
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE username = ?`, username).Scan(&n); err != nil {
			return err
		} else if n > 0 {
			return db.Errorf(db.ECONFLICT, "username %q is taken", username)
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, ?, ?, ?) RETURNING id`,
			username, string(hash), role, u.CreatedAt.UnixMilli()).Scan(&u.ID)
		if sqldb.IsUniqueViolation(err) {
			// Taken by a sign-up that committed after the check (PostgreSQL runs them side by side).
			return db.Errorf(db.ECONFLICT, "username %q is taken", username)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// EnsureUser creates the account or resets its password and role; used for
// the bootstrap admin. A reset that changes either ends the account's sessions.
func (s *Service) EnsureUser(ctx context.Context, username, password, role string) (*model.User, error) {
	u, err := s.CreateUser(ctx, username, password, role)
	if db.ErrorCode(err) != db.ECONFLICT {
		return u, err
	}
	var id int64
	var hash, oldRole string
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT id, password_hash, role FROM users WHERE username = ?`, username).Scan(&id, &hash, &oldRole); err != nil {
		return nil, err
	}
	if same, err := s.Hashes.Compare(ctx, hash, password); err != nil {
		return nil, err
	} else if oldRole == role && same {
		return s.User(ctx, id)
	}
	newHash, err := s.Hashes.Generate(ctx, password, s.bcryptCost())
	if err != nil {
		return nil, err
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE users SET password_hash = ?, role = ? WHERE id = ?`, string(newHash), role, id); err != nil {
		return nil, err
	}
	if err := s.revokeUser(ctx, id); err != nil {
		return nil, err
	}
	return s.User(ctx, id)
}

// ChangePassword replaces the user's password after checking the current
// one, and ends every session of the user issued until now: the caller needs
// a fresh token.
func (s *Service) ChangePassword(ctx context.Context, userID int64, current, next string) (*model.User, error) {
	var hash string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT password_hash FROM users WHERE id = ?`, userID).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.EUNAUTHORIZED, "no such account")
	} else if err != nil {
		return nil, err
	}
	if ok, err := s.Hashes.Compare(ctx, hash, current); err != nil {
		return nil, err
	} else if !ok {
		return nil, db.Errorf(db.EUNAUTHORIZED, "the current password is wrong")
	}
	if p := passwordProblem(next); p != "" {
		return nil, db.FieldErrorf("new_password", "%s", p)
	}
	newHash, err := s.Hashes.Generate(ctx, next, s.bcryptCost())
	if err != nil {
		return nil, err
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE users SET password_hash = ? WHERE id = ?`, string(newHash), userID); err != nil {
		return nil, err
	}
	if err := s.revokeUser(ctx, userID); err != nil {
		return nil, err
	}
	return s.User(ctx, userID)
}

// revokeUser ends every session of the user issued until now.
func (s *Service) revokeUser(ctx context.Context, userID int64) error {
	r := s.Revocations
	if r == nil {
		r = NewRevocations(s.Redis, 0)
	}
	return r.RevokeUser(ctx, userID, s.Now())
}

// Authenticate returns the user whose username and password match.
func (s *Service) Authenticate(ctx context.Context, username, password string) (*model.User, error) {
	var u model.User
	var hash string
	var created int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT id, username, role, password_hash, created_ms FROM users WHERE username = ?`, username).
		Scan(&u.ID, &u.Username, &u.Role, &hash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		// Spend the same time as a real check so timing does not reveal usernames.
		if _, err := s.Hashes.Compare(ctx, "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3y6wYy4Y1r5rVj3l8N6G/zC", password); err != nil {
			return nil, err
		}
		return nil, db.Errorf(db.EUNAUTHORIZED, "wrong username or password")
	} else if err != nil {
		return nil, err
	}
	if ok, err := s.Hashes.Compare(ctx, hash, password); err != nil {
		return nil, err
	} else if !ok {
		return nil, db.Errorf(db.EUNAUTHORIZED, "wrong username or password")
	}
	u.CreatedAt = time.UnixMilli(created).UTC()
	return &u, nil
}

// User returns the account with the given ID.
func (s *Service) User(ctx context.Context, id int64) (*model.User, error) {
	return s.userBy(ctx, `id = ?`, id)
}

// UserByName returns the account with the given username.
func (s *Service) UserByName(ctx context.Context, username string) (*model.User, error) {
	return s.userBy(ctx, `username = ?`, username)
}

func (s *Service) userBy(ctx context.Context, where string, arg any) (*model.User, error) {
	var u model.User
	var created int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT id, username, role, created_ms FROM users WHERE `+where, arg).
		Scan(&u.ID, &u.Username, &u.Role, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "user not found")
	} else if err != nil {
		return nil, err
	}
	u.CreatedAt = time.UnixMilli(created).UTC()
	return &u, nil
}

// SeedUsers creates n shoppers named prefix0…prefixN-1 in one transaction,
// all with the given password hashed once; the load bench uses it to make
// thousands of accounts in a moment. Existing names are left alone.
func (s *Service) SeedUsers(ctx context.Context, prefix, password string, n int) ([]*model.User, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	now := s.Now().UnixMilli()
	users := make([]*model.User, 0, n)
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, ?, 'user', ?)
			ON CONFLICT (username) DO UPDATE SET username = excluded.username RETURNING id`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for i := 0; i < n; i++ {
			u := &model.User{Username: fmt.Sprintf("%s%d", prefix, i), Role: model.RoleUser}
			if err := ins.QueryRowContext(ctx, u.Username, string(hash), now).Scan(&u.ID); err != nil {
				return err
			}
			users = append(users, u)
		}
		return nil
	})
	return users, err
}
