package account

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"strings"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
)

// UserSettings returns the user's reminder addresses.
func (s *Service) UserSettings(ctx context.Context, userID int64) (model.Settings, error) {
	var st model.Settings
	err := s.SQL.R.QueryRowContext(ctx, `SELECT email, webhook_url FROM users WHERE id = ?`, userID).Scan(&st.Email, &st.WebhookURL)
	if errors.Is(err, sql.ErrNoRows) {
		return model.Settings{}, db.Errorf(db.ENOTFOUND, "user not found")
	} else if err != nil {
		return model.Settings{}, fmt.Errorf("settings of user %d: %w", userID, err)
	}
	return st, nil
}

// UpdateSettings validates and applies the given fields and returns the result.
func (s *Service) UpdateSettings(ctx context.Context, userID int64, upd model.SettingsUpdate) (model.Settings, error) {
	if upd.Email != nil {
		e := strings.TrimSpace(*upd.Email)
		if err := ValidateEmail(e); err != nil {
			return model.Settings{}, err
		}
		upd.Email = &e
	}
	if upd.WebhookURL != nil {
		w := strings.TrimSpace(*upd.WebhookURL)
		if w != "" {
			if err := ValidateWebhookURL(ctx, w, s.WebhookAllowPrivate); err != nil {
				return model.Settings{}, err
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
		return model.Settings{}, err
	}
	return s.UserSettings(ctx, userID)
}

// ValidateEmail checks a reminder address: empty (none), or one plain
// address of at most db.MaxEmailBytes without control characters.
func ValidateEmail(e string) error {
	if e == "" {
		return nil
	}
	if len(e) > db.MaxEmailBytes {
		return db.FieldErrorf("email", "must be at most %d bytes", db.MaxEmailBytes)
	}
	if fe := db.CheckText("email", e, db.MaxEmailBytes, false); fe != nil {
		return fe
	}
	if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
		return db.FieldErrorf("email", "is not an address")
	}
	return nil
}

// MaxWebhookURL is the longest webhook URL accepted, in bytes.
const MaxWebhookURL = 2048

// ValidateWebhookURL accepts an http or https URL with a host and no user
// information or control characters, at most MaxWebhookURL bytes long, whose
// host (an IP literal or a name) resolves only to addresses outbound.GlobalUnicast
// accepts; allowPrivate (WEBHOOK_ALLOW_PRIVATE) skips the address check.
func ValidateWebhookURL(ctx context.Context, raw string, allowPrivate bool) error {
	if len(raw) > MaxWebhookURL {
		return db.FieldErrorf("webhook_url", "is longer than %d bytes", MaxWebhookURL)
	}
	if fe := db.CheckText("webhook_url", raw, MaxWebhookURL, false); fe != nil {
		return fe
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return db.FieldErrorf("webhook_url", "must be an http or https URL")
	}
	if u.User != nil {
		return db.FieldErrorf("webhook_url", "must not carry a user name or password")
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
			return db.FieldErrorf("webhook_url", "host %q does not resolve", host)
		}
	}
	for _, a := range addrs {
		if !outbound.GlobalUnicast(a) {
			// The address itself stays out of the message: it would show
			// anyone how internal names resolve.
			return db.FieldErrorf("webhook_url", "must be a public web address (https://…) that the shop can reach, not one inside your network")
		}
	}
	return nil
}
