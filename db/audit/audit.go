// Package audit is the append-only audit log: every admin or merchant change
// and every sign-in attempt, read back newest first.
package audit

import (
	"context"
	"database/sql"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Actions of the sign-in entries; a failed attempt appends "_failed".
const (
	ActionLogin    = "auth.login"
	ActionRegister = "auth.register"
)

// Limits of the log: how long a detail may be, and the page sizes of Entries.
const (
	DetailMax    = 1000
	DefaultLimit = 50
	MaxLimit     = 200
	fieldMax     = 200 // actor, action and target
)

// Service appends to and reads the audit log in SQLite.
type Service struct {
	*backend.Backend
}

// New returns the audit log over b.
func New(b *backend.Backend) *Service { return &Service{Backend: b} }

// Entry is one line of the append-only audit log. IP is kept for
// operators (the HTML page) and is not part of the JSON contract.
type Entry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	ActorID int64     `json:"actor_id"` // 0 when nobody is known (a failed sign-in)
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Target  string    `json:"target"`
	Detail  string    `json:"detail"`
	IP      string    `json:"-"`
}

// Append appends e to the audit log; At left zero means now, and is kept to
// the millisecond. Long fields are cut (the detail to DetailMax bytes)
// rather than refused, because an entry is written after the change it
// records has been made.
func (s *Service) Append(ctx context.Context, e Entry) error {
	if e.Action == "" {
		return db.Errorf(db.EINVALID, "audit entry needs an action")
	}
	if e.At.IsZero() {
		e.At = s.Now()
	}
	var actorID sql.NullInt64
	if e.ActorID > 0 {
		actorID = sql.NullInt64{Int64: e.ActorID, Valid: true}
	}
	_, err := s.SQL.W.ExecContext(ctx, `INSERT INTO audit_log (at_ms, actor_id, actor, action, target, detail, ip) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.At.UnixMilli(), actorID, truncateUTF8(e.Actor, fieldMax), truncateUTF8(e.Action, fieldMax),
		truncateUTF8(e.Target, fieldMax), truncateUTF8(e.Detail, DetailMax), truncateUTF8(e.IP, fieldMax))
	if err != nil {
		return fmt.Errorf("append audit entry %s: %w", e.Action, err)
	}
	return nil
}

// SignIn appends the outcome of a sign-in or sign-up attempt (action
// ActionLogin or ActionRegister): u is the account on success; err, when not
// nil, makes it action+"_failed" with the tried username as actor.
func (s *Service) SignIn(ctx context.Context, action, username string, u *model.User, ip string, err error) error {
	e := Entry{Actor: username, Action: action, IP: ip}
	if err != nil {
		e.Action += "_failed"
		e.Detail = db.ErrorMessage(err)
	} else if u != nil {
		e.ActorID, e.Actor, e.Target = u.ID, u.Username, fmt.Sprintf("user:%d", u.ID)
	}
	return s.Append(ctx, e)
}

// Entries returns up to limit entries with IDs below before (0: from
// the newest), newest first. An admin sees every entry; a merchant sees only
// the entries it is the actor of (its own changes and sign-ins), never other
// merchants' or the admins'. limit 0 means DefaultLimit.
func (s *Service) Entries(ctx context.Context, caller model.Claims, before int64, limit int) ([]Entry, error) {
	if before < 0 {
		return nil, db.Errorf(db.EINVALID, "before must be an entry id")
	}
	if limit == 0 {
		limit = DefaultLimit
	} else if limit < 0 || limit > MaxLimit {
		return nil, db.Errorf(db.EINVALID, "limit must be 1–%d", MaxLimit)
	}
	if before == 0 {
		before = 1<<63 - 1
	}
	q := `SELECT id, at_ms, COALESCE(actor_id, 0), actor, action, target, detail, ip FROM audit_log WHERE id < ?`
	args := []any{before}
	switch caller.Role {
	case model.RoleAdmin:
	case model.RoleMerchant:
		q += ` AND actor_id = ?`
		args = append(args, caller.UserID)
	default:
		return nil, db.ErrForbidden
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.SQL.R.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	defer rows.Close()
	entries := []Entry{}
	for rows.Next() {
		var e Entry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.ActorID, &e.Actor, &e.Action, &e.Target, &e.Detail, &e.IP); err != nil {
			return nil, err
		}
		e.At = time.UnixMilli(at).UTC()
		entries = append(entries, e)
	}
	return entries, rows.Err()
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
