package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Coupon is a coupon template: what a merchant puts up for grabs.
type Coupon struct {
	ID            int64     `json:"id"`
	ShopID        int64     `json:"shop_id"`
	Title         string    `json:"title"`
	Kind          string    `json:"kind"`
	Value         int64     `json:"value"`
	MinSpendCents int64     `json:"min_spend_cents"`
	Stock         int64     `json:"stock"`
	LimitPerUser  int64     `json:"limit_per_user"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	GrabEndAt     time.Time `json:"grab_end_at"`
	ValidDays     int       `json:"valid_days"`
	Remaining     int64     `json:"remaining"`
	State         string    `json:"state"`
}

// UserCoupon is a coupon a user has grabbed.
type UserCoupon struct {
	ID         int64     `json:"id"`
	CouponID   int64     `json:"coupon_id"`
	UserID     int64     `json:"user_id"`
	Status     string    `json:"status"`
	GrabbedAt  time.Time `json:"grabbed_at"`
	ValidUntil time.Time `json:"valid_until"`
	// The template's terms, filled when listing a user's coupons.
	Title         string `json:"title,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Value         int64  `json:"value,omitempty"`
	MinSpendCents int64  `json:"min_spend_cents,omitempty"`
}

// CouponEvent is the live event sent on a template's topic when its stock changes.
type CouponEvent struct {
	Type      string `json:"type"`
	CouponID  int64  `json:"coupon_id"`
	Remaining int64  `json:"remaining"`
}

// Redis keys of one template, all under the {coupon:ID} hash tag.
func couponKey(id int64, part string) string { return fmt.Sprintf("{coupon:%d}:%s", id, part) }
func couponMetaKey(id int64) string          { return couponKey(id, "meta") }
func couponStockKey(id int64) string         { return couponKey(id, "stock") }
func couponUsersKey(id int64) string         { return couponKey(id, "users") }
func couponReqKey(id, userID int64, req string) string {
	return couponKey(id, "req:"+strconv.FormatInt(userID, 10)+":"+req)
}

// couponQueue is the template's flush queue of grabbed coupons.
func couponQueue(id int64) backend.FlushQueue {
	return backend.FlushQueue{Pending: couponKey(id, "grabs"), Processing: couponKey(id, "grabs:processing")}
}

// couponQueuesKey lists the templates whose flush queues may hold records.
const couponQueuesKey = "seckill:coupons:queues"

const couponColumns = `id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_at, grab_end_at, valid_days`

type rowScanner interface{ Scan(dest ...any) error }

func scanCoupon(r rowScanner) (*Coupon, error) {
	var c Coupon
	var start, end string
	if err := r.Scan(&c.ID, &c.ShopID, &c.Title, &c.Kind, &c.Value, &c.MinSpendCents, &c.Stock, &c.LimitPerUser, &start, &end, &c.ValidDays); err != nil {
		return nil, err
	}
	c.GrabStartAt, _ = time.Parse(time.RFC3339, start)
	c.GrabEndAt, _ = time.Parse(time.RFC3339, end)
	return &c, nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// CreateCoupon validates and stores a template owned by shopID and loads it into Redis.
func (s *Store) CreateCoupon(ctx context.Context, shopID int64, in CouponInput) (*Coupon, error) {
	now := s.Now()
	if err := NormaliseCouponInput(&in, now); err != nil {
		return nil, err
	}
	res, err := s.SQL.W.ExecContext(ctx, `INSERT INTO coupons (shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_at, grab_end_at, valid_days, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		shopID, in.Title, in.Kind, in.Value, in.MinSpendCents, in.Stock, in.LimitPerUser,
		formatTime(in.GrabStartAt), formatTime(in.GrabEndAt), in.ValidDays, now.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return nil, fmt.Errorf("insert coupon: %w", err)
	}
	id, _ := res.LastInsertId()
	c := &Coupon{ID: id, ShopID: shopID, Title: in.Title, Kind: in.Kind, Value: in.Value, MinSpendCents: in.MinSpendCents,
		Stock: in.Stock, LimitPerUser: in.LimitPerUser, GrabStartAt: in.GrabStartAt, GrabEndAt: in.GrabEndAt, ValidDays: in.ValidDays}
	if err := s.loadCoupon(ctx, c); err != nil {
		return nil, err
	}
	c.Remaining, c.State = c.Stock, CouponState(c.GrabStartAt, c.GrabEndAt, now)
	return c, nil
}

// couponRow reads a template from SQLite without its live figures.
func (s *Store) couponRow(ctx context.Context, id int64) (*Coupon, error) {
	c, err := scanCoupon(s.SQL.R.QueryRowContext(ctx, `SELECT `+couponColumns+` FROM coupons WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "coupon %d not found", id)
	}
	return c, err
}

// Coupon returns a template with its live remaining stock.
func (s *Store) Coupon(ctx context.Context, id int64) (*Coupon, error) {
	c, err := s.couponRow(ctx, id)
	if err != nil {
		return nil, err
	}
	return c, s.fillLive(ctx, []*Coupon{c})
}

// Coupons lists the templates that are live or upcoming, soonest first.
func (s *Store) Coupons(ctx context.Context) ([]*Coupon, error) {
	return s.couponsWhere(ctx, `grab_end_at > ? ORDER BY grab_start_at, id LIMIT 200`, formatTime(s.Now()))
}

// ShopCoupons lists the templates a merchant owns (every template for an admin), newest first.
func (s *Store) ShopCoupons(ctx context.Context, actor model.Claims) ([]*Coupon, error) {
	if actor.Role == model.RoleAdmin {
		return s.couponsWhere(ctx, `1 ORDER BY id DESC LIMIT 500`)
	}
	return s.couponsWhere(ctx, `shop_id = ? ORDER BY id DESC LIMIT 500`, actor.UserID)
}

func (s *Store) couponsWhere(ctx context.Context, where string, args ...any) ([]*Coupon, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+couponColumns+` FROM coupons WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*Coupon{}
	for rows.Next() {
		c, err := scanCoupon(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, s.fillLive(ctx, out)
}

// fillLive sets state and remaining stock: from Redis in one pipeline, or
// from SQLite for a template Redis does not hold (it loads on first grab).
func (s *Store) fillLive(ctx context.Context, cs []*Coupon) error {
	if len(cs) == 0 {
		return nil
	}
	now := s.Now()
	pipe := s.Redis.Pipeline()
	gets := make([]*redis.StringCmd, len(cs))
	for i, c := range cs {
		gets[i] = pipe.Get(ctx, couponStockKey(c.ID))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read coupon stock: %w", err)
	}
	for i, c := range cs {
		c.State = CouponState(c.GrabStartAt, c.GrabEndAt, now)
		if n, err := gets[i].Int64(); err == nil {
			c.Remaining = n
			continue
		}
		var grabbed int64
		if err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID).Scan(&grabbed); err != nil {
			return err
		}
		c.Remaining = c.Stock - grabbed
	}
	return nil
}

// loadCouponMeta puts a template's window, limit and stock in Redis unless it is there already.
//
// KEYS[1] meta hash, KEYS[2] stock
// ARGV[1] start (unix ms), ARGV[2] end (unix ms), ARGV[3] limit per user,
// ARGV[4] valid days, ARGV[5] total stock, ARGV[6] remaining stock
// Returns 1 when it loaded the template, 0 when Redis held it already.
var loadCouponMeta = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[6])
redis.call('HSET', KEYS[1], 'start', ARGV[1], 'end', ARGV[2], 'limit', ARGV[3], 'days', ARGV[4], 'total', ARGV[5])
return 1
`)

// loadCouponUsers restores per-user grab counts; a count already in Redis is
// kept, as it is at least as new as SQLite's.
//
// KEYS[1] users hash
// ARGV pairs of user ID and count
// Returns 0.
var loadCouponUsers = redis.NewScript(`
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 0
`)

// loadCoupon makes Redis hold the template: at creation, and again when
// Redis has lost it (an embedded Redis after a restart). Counts come from
// SQLite, so grabs that were flushed keep counting against stock and limits.
func (s *Store) loadCoupon(ctx context.Context, c *Coupon) error {
	if n, err := s.Redis.Exists(ctx, couponMetaKey(c.ID)).Result(); err != nil {
		return fmt.Errorf("check coupon %d in redis: %w", c.ID, err)
	} else if n == 1 {
		return nil
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT user_id, COUNT(*) FROM user_coupons WHERE coupon_id = ? GROUP BY user_id`, c.ID)
	if err != nil {
		return err
	}
	var grabbed int64
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := loadCouponUsers.Run(ctx, s.Redis, []string{couponUsersKey(c.ID)}, args...).Err()
		args = args[:0]
		return err
	}
	for rows.Next() {
		var uid, n int64
		if err := rows.Scan(&uid, &n); err != nil {
			rows.Close()
			return err
		}
		grabbed += n
		if args = append(args, uid, n); len(args) >= 1000 {
			if err := flush(); err != nil {
				rows.Close()
				return err
			}
		}
	}
	rows.Close()
	if err := errors.Join(rows.Err(), flush()); err != nil {
		return fmt.Errorf("load coupon %d users: %w", c.ID, err)
	}
	err = loadCouponMeta.Run(ctx, s.Redis, []string{couponMetaKey(c.ID), couponStockKey(c.ID)},
		c.GrabStartAt.UnixMilli(), c.GrabEndAt.UnixMilli(), c.LimitPerUser, c.ValidDays, c.Stock, c.Stock-grabbed).Err()
	if err != nil {
		return fmt.Errorf("load coupon %d: %w", c.ID, err)
	}
	return s.Redis.SAdd(ctx, couponQueuesKey, c.ID).Err()
}

// GrabMemoTTL is how long a successful grab is remembered under its request ID.
const GrabMemoTTL = 5 * time.Minute

// Grab script results.
const (
	grabOK = iota
	grabNotLoaded
	grabNotStarted
	grabEnded
	grabLimit
	grabSoldOut
)

// grabCoupon decides a grab in one round trip: the window, the user's count,
// then stock; on success it counts the user, takes a unit and queues the
// coupon for the flush. A success is remembered under the request ID, so a
// command that go-redis sends again answers the same without grabbing twice;
// a refusal changed nothing, so running it again simply decides afresh (and
// memos stay bounded by the stock, not by the crowd).
//
// KEYS[1] meta hash, KEYS[2] stock, KEYS[3] users hash, KEYS[4] request memo, KEYS[5] pending flush queue
// ARGV[1] user ID, ARGV[2] now (unix ms), ARGV[3] memo TTL (seconds),
// ARGV[4] "1" when the grab carries an Idempotency-Key: refusals are remembered too
// Returns {code, unit, grabbed at (unix ms), valid days, remaining}; code is
// 0 grabbed, 1 template not in Redis, 2 not started, 3 ended, 4 limit reached, 5 sold out.
var grabCoupon = redis.NewScript(`
local memo = redis.call('GET', KEYS[4])
if memo then return cjson.decode(memo) end
local function refuse(res)
	if ARGV[4] == '1' then redis.call('SET', KEYS[4], cjson.encode(res), 'EX', tonumber(ARGV[3])) end
	return res
end
local meta = redis.call('HMGET', KEYS[1], 'start', 'end', 'limit', 'days', 'total')
if not meta[1] then return {1, 0, 0, 0, 0} end
local now = tonumber(ARGV[2])
if now < tonumber(meta[1]) then return refuse({2, 0, 0, 0, 0}) end
if now >= tonumber(meta[2]) then return refuse({3, 0, 0, 0, 0}) end
if tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0') >= tonumber(meta[3]) then return refuse({4, 0, 0, 0, 0}) end
if tonumber(redis.call('GET', KEYS[2]) or '0') <= 0 then return refuse({5, 0, 0, 0, 0}) end
local left = redis.call('DECR', KEYS[2])
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
local unit = tonumber(meta[5]) - left
redis.call('RPUSH', KEYS[5], unit .. ':' .. ARGV[1] .. ':' .. ARGV[2])
local res = {0, unit, now, tonumber(meta[4]), left}
redis.call('SET', KEYS[4], cjson.encode(res), 'EX', tonumber(ARGV[3]))
return res
`)

// GrabCoupon gives the user one coupon of the template: one Lua script, no
// SQL. requestID identifies the attempt (empty: a new one); the coupon
// reaches SQLite through the batch flush.
func (s *Store) GrabCoupon(ctx context.Context, userID, couponID int64, requestID string) (*UserCoupon, error) {
	keyed := "0"
	if req, ok := KeyedRequestID(ctx, "coupon", userID); ok {
		requestID, keyed = req, "1"
	} else if requestID == "" {
		requestID = rdb.NewRequestID()
	}
	keys := []string{couponMetaKey(couponID), couponStockKey(couponID), couponUsersKey(couponID),
		couponReqKey(couponID, userID, requestID), couponQueue(couponID).Pending}
	for loaded := false; ; loaded = true {
		res, err := s.Eval(ctx, grabCoupon, keys, userID, s.Now().UnixMilli(), int(GrabMemoTTL/time.Second), keyed).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("grab coupon %d: %w", couponID, err)
		}
		switch res[0] {
		case grabOK:
			grabbed := time.UnixMilli(res[2]).UTC()
			s.Events.PublishCoalesced(live.TopicCoupon(couponID), CouponEvent{Type: "coupon", CouponID: couponID, Remaining: res[4]})
			return &UserCoupon{ID: UserCouponID(couponID, res[1]), CouponID: couponID, UserID: userID, Status: "unused",
				GrabbedAt: grabbed, ValidUntil: CouponValidUntil(grabbed, int(res[3]))}, nil
		case grabNotStarted:
			return nil, ErrNotStarted
		case grabEnded:
			return nil, ErrEnded
		case grabLimit:
			return nil, ErrLimitReached
		case grabSoldOut:
			return nil, ErrSoldOut
		case grabNotLoaded:
			if loaded {
				return nil, fmt.Errorf("coupon %d did not load into redis", couponID)
			}
			c, err := s.couponRow(ctx, couponID)
			if err != nil {
				return nil, err
			}
			if err := s.loadCoupon(ctx, c); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("grab coupon %d: unknown result %v", couponID, res)
		}
	}
}

// FlushCoupons moves grabbed coupons of every template from Redis to SQLite,
// and forgets the queues of templates that ended a while ago and are empty.
func (s *Store) FlushCoupons(ctx context.Context) error {
	ids, err := s.FlushSetIDs(ctx, couponQueuesKey)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		q := couponQueue(id)
		if _, err := s.Flush(ctx, q, func(tx *sql.Tx, recs []string) error { return s.applyCouponGrabs(ctx, tx, id, recs) }); err != nil {
			errs = append(errs, err)
			continue
		}
		end, err := s.Redis.HGet(ctx, couponMetaKey(id), "end").Int64()
		if (errors.Is(err, redis.Nil) || (err == nil && s.Now().Add(-time.Minute).UnixMilli() > end)) &&
			s.Redis.Exists(ctx, q.Pending, q.Processing).Val() == 0 {
			s.Redis.SRem(ctx, couponQueuesKey, id)
		}
	}
	return errors.Join(errs...)
}

// applyCouponGrabs writes "unit:user:grabbed-ms" records; the ID comes from
// the unit, so a batch applied twice after a crash writes nothing new.
func (s *Store) applyCouponGrabs(ctx context.Context, tx *sql.Tx, couponID int64, recs []string) error {
	var days int
	if err := tx.QueryRowContext(ctx, `SELECT valid_days FROM coupons WHERE id = ?`, couponID).Scan(&days); err != nil {
		return fmt.Errorf("coupon %d of queued grabs: %w", couponID, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO user_coupons (id, coupon_id, user_id, status, grabbed_at, valid_until) VALUES (?, ?, ?, 'unused', ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, rec := range recs {
		parts := strings.Split(rec, ":")
		var unit, user, ms int64
		var perr error
		if len(parts) == 3 {
			unit, perr = strconv.ParseInt(parts[0], 10, 64)
			user, _ = strconv.ParseInt(parts[1], 10, 64)
			ms, _ = strconv.ParseInt(parts[2], 10, 64)
		}
		if len(parts) != 3 || perr != nil || unit <= 0 || user <= 0 || ms <= 0 {
			s.Log.Error("skipping malformed coupon grab record", "coupon", couponID, "record", rec)
			continue
		}
		grabbed := time.UnixMilli(ms).UTC()
		if _, err := stmt.ExecContext(ctx, UserCouponID(couponID, unit), couponID, user,
			grabbed.Format(time.RFC3339Nano), CouponValidUntil(grabbed, days).Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("insert user coupon: %w", err)
		}
	}
	return nil
}

// UserCoupons lists the coupons the user has grabbed and that have reached SQLite, newest first.
func (s *Store) UserCoupons(ctx context.Context, userID int64) ([]*UserCoupon, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT u.id, u.coupon_id, u.status, u.grabbed_at, u.valid_until, c.title, c.kind, c.value, c.min_spend_cents
		FROM user_coupons u JOIN coupons c ON c.id = u.coupon_id WHERE u.user_id = ? ORDER BY u.grabbed_at DESC, u.id DESC LIMIT 500`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	now := s.Now()
	out := []*UserCoupon{}
	for rows.Next() {
		u := &UserCoupon{UserID: userID}
		var grabbed, until string
		if err := rows.Scan(&u.ID, &u.CouponID, &u.Status, &grabbed, &until, &u.Title, &u.Kind, &u.Value, &u.MinSpendCents); err != nil {
			return nil, err
		}
		u.GrabbedAt, _ = time.Parse(time.RFC3339Nano, grabbed)
		u.ValidUntil, _ = time.Parse(time.RFC3339Nano, until)
		if u.Status == "unused" && !now.Before(u.ValidUntil) {
			u.Status = "expired"
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// ownCoupon returns the template if actor may manage it: its merchant, or an admin.
func (s *Store) ownCoupon(ctx context.Context, actor model.Claims, id int64) (*Coupon, error) {
	c, err := s.couponRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if actor.Role != model.RoleAdmin && c.ShopID != actor.UserID {
		return nil, Errorf(ENOTFOUND, "coupon %d not found", id)
	}
	return c, nil
}
