package coupon

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// Reasons a grab Redis accepted lands in coupon_conflicts instead of user_coupons.
const (
	ConflictUnitTaken    = "unit_taken"    // another grab holds the unit: Redis sold it twice
	ConflictLimitReached = "limit_reached" // the user holds the template's limit already: Redis forgot their grabs
	ConflictNoUnit       = "no_unit"       // the unit is past the template's stock: Redis's counter is corrupt
)

// StatusFailed is the status of a grab Redis accepted and the durable record
// refused: the user does not hold the coupon.
const StatusFailed = "failed"

// NotificationFailed is the inbox kind that tells a user a grab was refused.
const NotificationFailed = "coupon_failed"

// UserCouponEvent is the live event on the user's own topic when one of their
// coupons changes: today, a grab the durable record refused.
type UserCouponEvent struct {
	Type       string            `json:"type"` // "user_coupon"
	UserCoupon *model.UserCoupon `json:"user_coupon"`
}

// grabRecord is one "unit:user:grabbed-ms" record of a flush queue.
type grabRecord struct{ unit, user, ms int64 }

func parseGrabRecord(rec string) (grabRecord, bool) {
	parts := strings.Split(rec, ":")
	if len(parts) != 3 {
		return grabRecord{}, false
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v <= 0 {
			return grabRecord{}, false
		}
		n[i] = v
	}
	return grabRecord{unit: n[0], user: n[1], ms: n[2]}, true
}

// applyGrabs writes a batch of one template's grab records under the durable
// guard: a grab becomes the user's coupon only if its unit is within the
// stock and free, and the user holds fewer than the limit; any other is kept
// in coupon_conflicts for settleConflicts. The coupon's ID comes from the
// unit and a conflict is keyed by the grab, so a batch applied twice after a
// crash writes nothing new.
func (s *Service) applyGrabs(ctx context.Context, tx *sql.Tx, couponID int64, recs []string) error {
	var days int
	var stock, limit int64
	if err := tx.QueryRowContext(ctx, `SELECT valid_days, stock, limit_per_user FROM coupons WHERE id = ?`, couponID).Scan(&days, &stock, &limit); err != nil {
		return fmt.Errorf("coupon %d of queued grabs: %w", couponID, err)
	}
	// One statement in the common case: the limit is checked inside it and
	// a unit already held makes it insert nothing.
	insert, err := tx.PrepareContext(ctx, `INSERT INTO user_coupons (id, coupon_id, user_id, status, grabbed_ms, valid_until_ms)
		SELECT ?1, ?2, ?3, 'unused', ?4, ?5 WHERE (SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?2 AND user_id = ?3) < ?6
		ON CONFLICT (id) DO NOTHING`)
	if err != nil {
		return err
	}
	defer insert.Close()
	holder, err := tx.PrepareContext(ctx, `SELECT user_id, grabbed_ms FROM user_coupons WHERE id = ?`)
	if err != nil {
		return err
	}
	defer holder.Close()
	conflict, err := tx.PrepareContext(ctx, `INSERT INTO coupon_conflicts (coupon_id, user_id, unit, grabbed_ms, reason, detected_ms)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (coupon_id, unit, user_id, grabbed_ms) DO NOTHING`)
	if err != nil {
		return err
	}
	defer conflict.Close()
	for _, rec := range recs {
		g, ok := parseGrabRecord(rec)
		if !ok {
			s.Log.Error("skipping malformed coupon grab record", "coupon", couponID, "record", rec)
			continue
		}
		id := UserCouponID(couponID, g.unit)
		reason := ConflictNoUnit
		if g.unit <= stock {
			grabbed := time.UnixMilli(g.ms).UTC()
			res, err := insert.ExecContext(ctx, id, couponID, g.user, g.ms, ValidUntil(grabbed, days).UnixMilli(), limit)
			if err != nil {
				return fmt.Errorf("insert user coupon %d: %w", id, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				continue
			}
			var user, ms int64
			switch err := holder.QueryRowContext(ctx, id).Scan(&user, &ms); {
			case err == nil && user == g.user && ms == g.ms:
				continue // this very grab, applied before a crash
			case err == nil:
				reason = ConflictUnitTaken
			case errors.Is(err, sql.ErrNoRows):
				reason = ConflictLimitReached
			default:
				return err
			}
		}
		res, err := conflict.ExecContext(ctx, couponID, g.user, g.unit, g.ms, reason, s.Now().UnixMilli())
		if err != nil {
			return fmt.Errorf("record refused grab of coupon %d: %w", couponID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			s.Log.Warn("durable record refused a coupon grab from Redis", "coupon", couponID, "unit", g.unit, "user", g.user, "reason", reason)
		}
	}
	return nil
}

// refused is a conflict not yet told to its user.
type refused struct {
	id, couponID, userID, unit, ms, limit int64
	reason, title                         string
}

// settleBatch is how many refused grabs one transaction of settleConflicts tells.
const settleBatch = 500

// settleConflicts tells the users of refused grabs, once each: one
// transaction writes their inbox messages and marks the conflicts handled;
// then Redis is corrected from the durable record and the live events go
// out. It runs after every flush, so a crash in between only delays it to the
// next; a crash after the commit loses at most the correction, which the next
// refused grab of the template makes again.
func (s *Service) settleConflicts(ctx context.Context) error {
	for {
		var fs []refused
		var msgs []live.Message
		now := s.Now().UTC()
		err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
			fs, msgs = fs[:0], msgs[:0]
			var err error
			if fs, err = unhandledConflicts(ctx, tx); err != nil {
				return err
			}
			for _, f := range fs {
				told, err := inbox.Add(ctx, tx, []int64{f.userID}, model.Notification{
					Kind: NotificationFailed, CouponID: f.couponID, Message: refusedText(f), CreatedAt: now})
				if err != nil {
					return err
				}
				msgs = append(msgs, inbox.Messages(told)...)
				if _, err := tx.ExecContext(ctx, `UPDATE coupon_conflicts SET handled = 1 WHERE id = ?`, f.id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("tell refused coupon grabs: %w", err)
		}
		for _, f := range fs {
			if err := s.correctRedis(ctx, f); err != nil {
				s.Log.Warn("correct coupon counts in redis after a refused grab", "coupon", f.couponID, "user", f.userID, "err", err)
			}
			at := fromMS(f.ms)
			ev, _ := json.Marshal(UserCouponEvent{Type: "user_coupon", UserCoupon: &model.UserCoupon{ID: UserCouponID(f.couponID, f.unit),
				CouponID: f.couponID, UserID: f.userID, Status: StatusFailed, GrabbedAt: at, ValidUntil: at, Title: f.title}})
			msgs = append(msgs, live.Message{Topic: live.TopicUser(f.userID), Event: ev})
		}
		if err := s.Events.PublishAll(ctx, msgs); err != nil {
			s.Log.Warn("push refused coupon grabs live", "err", err) // the inbox and the coupon list have them
		}
		if len(fs) < settleBatch {
			return nil
		}
	}
}

// unhandledConflicts reads the next refused grabs nobody was told of yet, oldest first.
func unhandledConflicts(ctx context.Context, tx *sql.Tx) ([]refused, error) {
	rows, err := tx.QueryContext(ctx, `SELECT f.id, f.coupon_id, f.user_id, f.unit, f.grabbed_ms, f.reason, c.title, c.limit_per_user
		FROM coupon_conflicts f JOIN coupons c ON c.id = f.coupon_id WHERE f.handled = 0 ORDER BY f.id LIMIT ?`, settleBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []refused
	for rows.Next() {
		var f refused
		if err := rows.Scan(&f.id, &f.couponID, &f.userID, &f.unit, &f.ms, &f.reason, &f.title, &f.limit); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// refusedText is the inbox message of a refused grab.
func refusedText(f refused) string {
	why := "the coupon had already gone to someone else"
	if f.reason == ConflictLimitReached {
		why = fmt.Sprintf("you already hold the %d allowed per person", f.limit)
	}
	return fmt.Sprintf("Your grab of “%s” at %s did not go through: %s. It is not in your coupons.",
		f.title, fromMS(f.ms).Format("2006-01-02 15:04:05 UTC"), why)
}

// correctScript brings a template's counts in Redis in line with SQLite
// after a refused grab. Units are handed out in order, so Redis's stock may
// not exceed what the highest unit SQLite holds leaves; it only ever falls.
// The user's count loses the refused grab but never drops below what the
// user holds in SQLite.
//
// KEYS[1] meta hash, KEYS[2] stock, KEYS[3] users hash
// ARGV[1] highest unit SQLite holds, ARGV[2] user ID, ARGV[3] coupons the user holds in SQLite
// Returns "ok", or "not_loaded" (Redis loads the template from SQLite on its next grab).
var correctScript = redis.NewScript(`
local total = redis.call('HGET', KEYS[1], 'total')
if not total then return 'not_loaded' end
local cap = tonumber(total) - tonumber(ARGV[1])
if tonumber(redis.call('GET', KEYS[2]) or '0') > cap then redis.call('SET', KEYS[2], cap) end
local count = tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0') - 1
if count < tonumber(ARGV[3]) then count = tonumber(ARGV[3]) end
redis.call('HSET', KEYS[3], ARGV[2], count)
return 'ok'
`)

// correctRedis runs correctScript for one refused grab with the figures SQLite holds now.
func (s *Service) correctRedis(ctx context.Context, f refused) error {
	top, err := s.topUnit(ctx, f.couponID)
	if err != nil {
		return err
	}
	var held int64
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ? AND user_id = ?`, f.couponID, f.userID).Scan(&held); err != nil {
		return err
	}
	return correctScript.Run(ctx, s.Redis, []string{metaKey(f.couponID), stockKey(f.couponID), usersKey(f.couponID)},
		top, f.userID, held).Err()
}

// topUnit is the highest unit of the template SQLite holds (0 for none), read
// from the coupon IDs, which the units decide.
func (s *Service) topUnit(ctx context.Context, couponID int64) (int64, error) {
	first := UserCouponID(couponID, 0)
	var top int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), ?1) FROM user_coupons WHERE id > ?1 AND id < ?1 + ?2`,
		first, userCouponIDMultiple).Scan(&top)
	return top - first, err
}
