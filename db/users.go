package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
	"golang.org/x/crypto/bcrypt"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

// ValidateCredentials checks a username and password against the account rules.
func ValidateCredentials(username, password string) error {
	if !usernameRE.MatchString(username) {
		return Errorf(EINVALID, "username must be 3–32 letters, digits or underscores")
	}
	return validatePassword(password)
}

func validatePassword(password string) error {
	if len(password) < 8 || len(password) > 72 {
		return Errorf(EINVALID, "password must be 8–72 bytes")
	}
	return nil
}

// ValidRole reports whether role is one of the known roles.
func ValidRole(role string) bool {
	return role == model.RoleUser || role == model.RoleMerchant || role == model.RoleAdmin
}

// CreateUser adds an account; a taken username is a conflict.
func (s *Store) CreateUser(ctx context.Context, username, password, role string) (*model.User, error) {
	if err := ValidateCredentials(username, password); err != nil {
		return nil, err
	}
	if !ValidRole(role) {
		return nil, Errorf(EINVALID, "role must be user, merchant or admin")
	}
	hash, err := s.Hashes.Generate(ctx, password, s.bcryptCost())
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err) // a full pool stays unavailable through the wrap
	}
	u := &model.User{Username: username, Role: role, CreatedAt: s.Now().UTC()}
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE username = ?`, username).Scan(&n); err != nil {
			return err
		} else if n > 0 {
			return Errorf(ECONFLICT, "username %q is taken", username)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO users (username, password_hash, role, created_at) VALUES (?, ?, ?, ?)`,
			username, string(hash), role, u.CreatedAt.Format(time.RFC3339Nano))
		if err != nil {
			return err
		}
		u.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// EnsureUser creates the account or resets its password and role; used for
// the bootstrap admin. A reset that changes either ends the account's sessions.
func (s *Store) EnsureUser(ctx context.Context, username, password, role string) (*model.User, error) {
	u, err := s.CreateUser(ctx, username, password, role)
	if ErrorCode(err) != ECONFLICT {
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
func (s *Store) ChangePassword(ctx context.Context, userID int64, current, next string) (*model.User, error) {
	var hash string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT password_hash FROM users WHERE id = ?`, userID).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(EUNAUTHORIZED, "no such account")
	} else if err != nil {
		return nil, err
	}
	if ok, err := s.Hashes.Compare(ctx, hash, current); err != nil {
		return nil, err
	} else if !ok {
		return nil, Errorf(EUNAUTHORIZED, "the current password is wrong")
	}
	if err := validatePassword(next); err != nil {
		return nil, err
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
func (s *Store) revokeUser(ctx context.Context, userID int64) error {
	r := s.Revocations
	if r == nil {
		r = NewRevocations(s.Redis, 0)
	}
	return r.RevokeUser(ctx, userID, s.Now())
}

// Authenticate returns the user whose username and password match.
func (s *Store) Authenticate(ctx context.Context, username, password string) (*model.User, error) {
	var u model.User
	var hash, created string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT id, username, role, password_hash, created_at FROM users WHERE username = ?`, username).
		Scan(&u.ID, &u.Username, &u.Role, &hash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		// Spend the same time as a real check so timing does not reveal usernames.
		if _, err := s.Hashes.Compare(ctx, "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3y6wYy4Y1r5rVj3l8N6G/zC", password); err != nil {
			return nil, err
		}
		return nil, Errorf(EUNAUTHORIZED, "wrong username or password")
	} else if err != nil {
		return nil, err
	}
	if ok, err := s.Hashes.Compare(ctx, hash, password); err != nil {
		return nil, err
	} else if !ok {
		return nil, Errorf(EUNAUTHORIZED, "wrong username or password")
	}
	u.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	return &u, nil
}

// User returns the account with the given ID.
func (s *Store) User(ctx context.Context, id int64) (*model.User, error) {
	return s.userBy(ctx, `id = ?`, id)
}

// UserByName returns the account with the given username.
func (s *Store) UserByName(ctx context.Context, username string) (*model.User, error) {
	return s.userBy(ctx, `username = ?`, username)
}

func (s *Store) userBy(ctx context.Context, where string, arg any) (*model.User, error) {
	var u model.User
	var created string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT id, username, role, created_at FROM users WHERE `+where, arg).
		Scan(&u.ID, &u.Username, &u.Role, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "user not found")
	} else if err != nil {
		return nil, err
	}
	u.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	return &u, nil
}

// UserSettings returns the user's reminder addresses.
func (s *Store) UserSettings(ctx context.Context, userID int64) (*model.Settings, error) {
	var st model.Settings
	err := s.SQL.R.QueryRowContext(ctx, `SELECT email, webhook_url FROM users WHERE id = ?`, userID).Scan(&st.Email, &st.WebhookURL)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "user not found")
	}
	return &st, err
}

// UpdateSettings validates and applies the given fields and returns the result.
func (s *Store) UpdateSettings(ctx context.Context, userID int64, upd model.SettingsUpdate) (*model.Settings, error) {
	if upd.Email != nil {
		e := strings.TrimSpace(*upd.Email)
		if err := ValidateEmail(e); err != nil {
			return nil, err
		}
		upd.Email = &e
	}
	if upd.WebhookURL != nil {
		w := strings.TrimSpace(*upd.WebhookURL)
		if w != "" {
			if err := ValidateWebhookURL(ctx, w, s.WebhookAllowPrivate); err != nil {
				return nil, err
			}
		}
		upd.WebhookURL = &w
	}
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		if upd.Email != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE users SET email = ? WHERE id = ?`, *upd.Email, userID); err != nil {
				return err
			}
		}
		if upd.WebhookURL != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE users SET webhook_url = ? WHERE id = ?`, *upd.WebhookURL, userID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.UserSettings(ctx, userID)
}

// ValidateEmail checks a reminder address: empty (none), or one plain
// address of at most MaxEmailBytes without control characters.
func ValidateEmail(e string) error {
	if e == "" {
		return nil
	}
	if len(e) > MaxEmailBytes {
		return Errorf(EINVALID, "email must be at most %d bytes", MaxEmailBytes)
	}
	if fe := CheckText("email", e, MaxEmailBytes, false); fe != nil {
		return fe
	}
	if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
		return Errorf(EINVALID, "email is not an address")
	}
	return nil
}

// SeedUsers creates n shoppers named prefix0…prefixN-1 in one transaction,
// all with the given password hashed once; the load bench uses it to make
// thousands of accounts in a moment. Existing names are left alone.
func (s *Store) SeedUsers(ctx context.Context, prefix, password string, n int) ([]*model.User, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	now := s.Now().UTC().Format(time.RFC3339Nano)
	users := make([]*model.User, 0, n)
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO users (username, password_hash, role, created_at) VALUES (?, ?, 'user', ?)
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

// MaxWebhookURL is the longest webhook URL accepted, in bytes.
const MaxWebhookURL = 2048

// ValidateWebhookURL accepts an http or https URL with a host and no user
// information or control characters, at most MaxWebhookURL bytes long, whose
// host (an IP literal or a name) resolves only to addresses outbound.GlobalUnicast
// accepts; allowPrivate (WEBHOOK_ALLOW_PRIVATE) skips the address check.
func ValidateWebhookURL(ctx context.Context, raw string, allowPrivate bool) error {
	if len(raw) > MaxWebhookURL {
		return Errorf(EINVALID, "webhook_url is longer than %d bytes", MaxWebhookURL)
	}
	if fe := CheckText("webhook_url", raw, MaxWebhookURL, false); fe != nil {
		return fe
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return Errorf(EINVALID, "webhook URL must be an http or https URL")
	}
	if u.User != nil {
		return Errorf(EINVALID, "webhook URL must not carry a user name or password")
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else {
		ctx, cancel := context.WithTimeout(ctx, outbound.WebhookTimeout)
		defer cancel()
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return Errorf(EINVALID, "webhook host %q does not resolve", host)
		}
	}
	for _, a := range addrs {
		if !outbound.GlobalUnicast(a) {
			// The address itself stays out of the message: it would show
			// anyone how internal names resolve.
			return Errorf(EINVALID, "webhook URL must point at a public Internet address")
		}
	}
	return nil
}
