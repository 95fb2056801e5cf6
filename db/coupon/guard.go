package coupon

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
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

// grabBatchColumns are the columns of a staged batch of grabs: the coupon's
// ID (from the unit), the grab, its end of validity, its place in the batch,
// and first_of_unit, 1 for the first grab of its unit in the batch.
var grabBatchColumns = []sqldb.Column{
	{Name: "id", Type: "BIGINT"}, {Name: "unit", Type: "BIGINT"}, {Name: "user_id", Type: "BIGINT"},
	{Name: "grabbed_ms", Type: "BIGINT"}, {Name: "valid_until_ms", Type: "BIGINT"}, {Name: "pos", Type: "BIGINT"}, {Name: "first_of_unit", Type: "BIGINT"},
}

// The statements of applyGrabs over the staged batch b.
const (
	// A grab becomes the user's coupon when its unit is within the stock
	// (?2), nobody holds it and no earlier grab of the batch claims it, and
	// the user's coupons with their earlier grabs of the batch that go in
	// stay within the limit (?3).
	insertGrabs = `INSERT INTO user_coupons (id, coupon_id, user_id, status, grabbed_ms, valid_until_ms)
		SELECT r.id, ?1, r.user_id, 'unused', r.grabbed_ms, r.valid_until_ms FROM (
			SELECT b.id, b.user_id, b.grabbed_ms, b.valid_until_ms, ROW_NUMBER() OVER (PARTITION BY b.user_id ORDER BY b.pos) AS n
			FROM grab_batch AS b
			WHERE b.unit <= ?2 AND b.first_of_unit = 1 AND NOT EXISTS (SELECT 1 FROM user_coupons AS u WHERE u.id = b.id)
		) AS r
		WHERE r.n + (SELECT COUNT(*) FROM user_coupons AS u WHERE u.coupon_id = ?1 AND u.user_id = r.user_id) <= ?3
		ON CONFLICT (id) DO NOTHING`
	// Every grab that is not the user's coupon now was refused (a grab
	// applied before a crash is: its coupon carries its user and time).
	recordRefusedGrabs = `INSERT INTO coupon_conflicts (coupon_id, user_id, unit, grabbed_ms, reason, detected_ms)
		SELECT ?1, b.user_id, b.unit, b.grabbed_ms,
			CASE WHEN b.unit > ?2 THEN '` + ConflictNoUnit + `'
				WHEN EXISTS (SELECT 1 FROM user_coupons AS u WHERE u.id = b.id) THEN '` + ConflictUnitTaken + `'
				ELSE '` + ConflictLimitReached + `' END, ?3
		FROM grab_batch AS b
		WHERE NOT EXISTS (SELECT 1 FROM user_coupons AS u WHERE u.id = b.id AND u.user_id = b.user_id AND u.grabbed_ms = b.grabbed_ms)
		ORDER BY b.pos
		ON CONFLICT (coupon_id, unit, user_id, grabbed_ms) DO NOTHING
		RETURNING user_id, unit, reason`
)

// applyGrabs writes a batch of one template's grab records under the durable
// guard, in two set-based statements over the staged batch: a grab becomes
// the user's coupon only if its unit is within the stock and free, and the
// user holds fewer than the limit; any other is kept in coupon_conflicts for
// settleConflicts. The coupon's ID comes from the unit and a conflict is
// keyed by the grab, so a batch applied twice after a crash writes nothing new.
func (s *Service) applyGrabs(ctx context.Context, tx *sql.Tx, couponID int64, recs []string) error {
	var days int
	var stock, limit int64
	if err := tx.QueryRowContext(ctx, `SELECT valid_days, stock, limit_per_user FROM coupons WHERE id = ?`, couponID).Scan(&days, &stock, &limit); err != nil {
		return fmt.Errorf("coupon %d of queued grabs: %w", couponID, err)
	}
	rows := make([][]any, 0, len(recs))
	seen, units := map[grabRecord]bool{}, map[int64]bool{}
	for _, rec := range recs {
		g, ok := parseGrabRecord(rec)
		if !ok {
			s.Log.Error("skipping malformed coupon grab record", "coupon", couponID, "record", rec)
			continue
		}
		if seen[g] { // the same grab twice: one grab
			continue
		}
		seen[g] = true
		first := int64(0)
		if !units[g.unit] {
			units[g.unit], first = true, 1
		}
		rows = append(rows, []any{UserCouponID(couponID, g.unit), g.unit, g.user, g.ms,
			ValidUntil(time.UnixMilli(g.ms).UTC(), days).UnixMilli(), int64(len(rows)), first})
	}
	if len(rows) == 0 {
		return nil
	}
	if err := s.SQL.Stage(ctx, tx, "grab_batch", grabBatchColumns, rows); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, insertGrabs, couponID, stock, limit); err != nil {
		return fmt.Errorf("insert coupons of coupon %d: %w", couponID, err)
	}
	refused, err := tx.QueryContext(ctx, recordRefusedGrabs, couponID, stock, s.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("record refused grabs of coupon %d: %w", couponID, err)
	}
	defer refused.Close()
	for refused.Next() {
		var user, unit int64
		var reason string
		if err := refused.Scan(&user, &unit, &reason); err != nil {
			return err
		}
		s.Log.Warn("durable record refused a coupon grab from Redis", "coupon", couponID, "unit", unit, "user", user, "reason", reason)
	}
	return refused.Err()
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
		read := 0
		now := s.Now().UTC()
		err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
			fs, msgs = fs[:0], msgs[:0]
			unhandled, err := unhandledConflicts(ctx, tx)
			if err != nil {
				return err
			}
			read = len(unhandled)
			for _, f := range unhandled {
				// Marked first: a settle running beside this one (on
				// PostgreSQL, where it may have read the same rows) tells nobody twice.
				res, err := tx.ExecContext(ctx, `UPDATE coupon_conflicts SET handled = 1 WHERE id = ? AND handled = 0`, f.id)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 0 {
					continue
				}
				told, err := inbox.Add(ctx, tx, []int64{f.userID}, model.Notification{
					Kind: NotificationFailed, CouponID: f.couponID, Message: refusedText(f), CreatedAt: now})
				if err != nil {
					return err
				}
				msgs = append(msgs, inbox.Messages(told)...)
				fs = append(fs, f)
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
		if read < settleBatch {
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
		f.title, fromMS(f.ms).UTC().Format(model.TimeLayout+":05")+" UTC", why)
}

// correctScript brings a template's counts in Redis in line with the store
// after a refused grab. Units are handed out in order, so Redis's stock may
// not exceed what the highest unit the store holds leaves; it only ever falls.
// The user's count loses the refused grab but never drops below what the
// user holds in the store.
//
// KEYS[1] meta hash, KEYS[2] stock, KEYS[3] users hash
// ARGV[1] highest unit the store holds, ARGV[2] user ID, ARGV[3] coupons the user holds in the store
// Returns "ok", or "not_loaded" (Redis loads the template from the store on its next grab).
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

// correctRedis runs correctScript for one refused grab with the figures the store holds now.
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

// topUnit is the highest unit of the template the store holds (0 for none), read
// from the coupon IDs, which the units decide.
func (s *Service) topUnit(ctx context.Context, couponID int64) (int64, error) {
	first := UserCouponID(couponID, 0)
	var top int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), ?1) FROM user_coupons WHERE id > ?1 AND id < ?1 + ?2`,
		first, userCouponIDMultiple).Scan(&top)
	return top - first, err
}
