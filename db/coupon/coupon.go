// Package coupon is the coupon area: templates a merchant puts up for grabs,
// the grab (one Lua script in Redis) and its batch flush to the store, reminder
// bookings (one bitmap per user and template) and their delivery in the app,
// by email and by webhook.
package coupon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Event is the live event sent on a template's topic when its stock changes.
type Event struct {
	Type      string `json:"type"`
	CouponID  int64  `json:"coupon_id"`
	Remaining int64  `json:"remaining"`
}

const columns = `id, shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_ms, grab_end_ms, valid_days`

type rowScanner interface{ Scan(dest ...any) error }

func scan(r rowScanner) (*model.Coupon, error) {
	var c model.Coupon
	var start, end int64
	if err := r.Scan(&c.ID, &c.ShopID, &c.Title, &c.Kind, &c.Value, &c.MinSpendCents, &c.Stock, &c.LimitPerUser, &start, &end, &c.ValidDays); err != nil {
		return nil, err
	}
	c.GrabStartAt, c.GrabEndAt = fromMS(start), fromMS(end)
	return &c, nil
}

// fromMS reads a time the store holds as unix milliseconds.
func fromMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Create validates and stores a template owned by shopID and loads it into Redis.
func (s *Service) Create(ctx context.Context, shopID int64, in model.CouponInput) (_ *model.Coupon, err error) {
	defer s.announce(ctx, &err)
	now := s.Now()
	if err := NormaliseInput(&in, now); err != nil {
		return nil, err
	}
	var id int64
	err = s.SQL.W.QueryRowContext(ctx, `INSERT INTO coupons (shop_id, title, kind, value, min_spend_cents, stock, limit_per_user, grab_start_ms, grab_end_ms, valid_days, created_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		shopID, in.Title, in.Kind, in.Value, in.MinSpendCents, in.Stock, in.LimitPerUser,
		in.GrabStartAt.UnixMilli(), in.GrabEndAt.UnixMilli(), in.ValidDays, now.UnixMilli()).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("insert coupon: %w", err)
	}
	c := &model.Coupon{ID: id, ShopID: shopID, Title: in.Title, Kind: in.Kind, Value: in.Value, MinSpendCents: in.MinSpendCents,
		Stock: in.Stock, LimitPerUser: in.LimitPerUser, GrabStartAt: in.GrabStartAt, GrabEndAt: in.GrabEndAt, ValidDays: in.ValidDays}
	if err := s.load(ctx, c); err != nil {
		return nil, err
	}
	c.Remaining, c.State = c.Stock, State(c.GrabStartAt, c.GrabEndAt, now)
	return c, nil
}

// Check returns the problems of a template's fields, creating nothing: a
// form that could not read some fields shows the others' problems too.
func (s *Service) Check(in model.CouponInput) error { return NormaliseInput(&in, s.Now()) }

// row reads a template from the store without its live figures.
func (s *Service) row(ctx context.Context, id int64) (*model.Coupon, error) {
	c, err := scan(s.SQL.R.QueryRowContext(ctx, `SELECT `+columns+` FROM coupons WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "coupon %d not found", id)
	}
	return c, err
}

// Get returns a template with its live remaining stock.
func (s *Service) Get(ctx context.Context, id int64) (*model.Coupon, error) {
	c, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	return c, s.fillLive(ctx, []*model.Coupon{c})
}

// List lists the templates that are live or upcoming, soonest first.
func (s *Service) List(ctx context.Context) ([]*model.Coupon, error) {
	return s.listWhere(ctx, `grab_end_ms > ? ORDER BY grab_start_ms, id LIMIT 200`, s.Now().UnixMilli())
}

// Managed lists the templates a merchant owns (every template for an admin), newest first.
func (s *Service) Managed(ctx context.Context, actor model.Claims) ([]*model.Coupon, error) {
	if actor.Role == model.RoleAdmin {
		return s.listWhere(ctx, `true ORDER BY id DESC LIMIT 500`)
	}
	return s.listWhere(ctx, `shop_id = ? ORDER BY id DESC LIMIT 500`, actor.UserID)
}

func (s *Service) listWhere(ctx context.Context, where string, args ...any) ([]*model.Coupon, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+columns+` FROM coupons WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*model.Coupon{}
	for rows.Next() {
		c, err := scan(rows)
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
// from the store for a template Redis does not hold (it loads on first grab).
func (s *Service) fillLive(ctx context.Context, cs []*model.Coupon) error {
	if len(cs) == 0 {
		return nil
	}
	now := s.Now()
	pipe := s.Redis.Pipeline()
	gets := make([]*redis.StringCmd, len(cs))
	for i, c := range cs {
		gets[i] = pipe.Get(ctx, stockKey(c.ID))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read coupon stock: %w", err)
	}
	for i, c := range cs {
		c.State = State(c.GrabStartAt, c.GrabEndAt, now)
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

// loadMetaScript puts a template's window, limit and stock in Redis unless it is there already.
//
// KEYS[1] meta hash, KEYS[2] stock
// ARGV[1] start (unix ms), ARGV[2] end (unix ms), ARGV[3] limit per user,
// ARGV[4] valid days, ARGV[5] total stock, ARGV[6] remaining stock
// Returns "loaded", or "present" when Redis held the template already (nothing changed).
var loadMetaScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 'present' end
redis.call('SET', KEYS[2], ARGV[6])
redis.call('HSET', KEYS[1], 'start', ARGV[1], 'end', ARGV[2], 'limit', ARGV[3], 'days', ARGV[4], 'total', ARGV[5])
return 'loaded'
`)

// loadUsersScript restores per-user grab counts; a count already in Redis is
// kept, as it is at least as new as the store's.
//
// KEYS[1] users hash
// ARGV pairs of user ID and count
// Returns "ok".
var loadUsersScript = redis.NewScript(`
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 'ok'
`)

// load makes Redis hold the template: at creation, and again when
// Redis has lost it (an embedded Redis after a restart). Counts come from
// the store, so grabs that were flushed keep counting against stock and limits.
func (s *Service) load(ctx context.Context, c *model.Coupon) error {
	if n, err := s.Redis.Exists(ctx, metaKey(c.ID)).Result(); err != nil {
		return fmt.Errorf("check coupon %d in redis: %w", c.ID, err)
	} else if n == 1 {
		return nil
	}
	// A flusher may still hold grabs of the Redis that lost it: fenced
	// first, they have committed before the counts are read, or never
	// commit (db/backend/lease.go, step 5).
	if err := s.FenceLanes(ctx, grabQueue(c.ID)); err != nil {
		return fmt.Errorf("load coupon %d: %w", c.ID, err)
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
		err := loadUsersScript.Run(ctx, s.Redis, []string{usersKey(c.ID)}, args...).Err()
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
	// Units go out in order, so none up to the highest unit the store holds may go
	// out again, even where a refused grab left a gap below it.
	top, err := s.topUnit(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("load coupon %d: %w", c.ID, err)
	}
	// Nor any up to the ceiling: the units a lost node may have given (ceiling.go).
	ceiling, err := s.IssueCeiling(ctx, unitRun(c.ID))
	if err != nil {
		return fmt.Errorf("load coupon %d: %w", c.ID, err)
	}
	grabbed = max(grabbed, top, ceiling)
	err = loadMetaScript.Run(ctx, s.Redis, []string{metaKey(c.ID), stockKey(c.ID)},
		c.GrabStartAt.UnixMilli(), c.GrabEndAt.UnixMilli(), c.LimitPerUser, c.ValidDays, c.Stock, c.Stock-grabbed).Err()
	if err != nil {
		return fmt.Errorf("load coupon %d: %w", c.ID, err)
	}
	return s.Redis.SAdd(ctx, queuesKey, c.ID).Err()
}

// grabMemoTTL is how long a successful grab is remembered under its request ID.
const grabMemoTTL = 5 * time.Minute

// grabScript decides a grab in one round trip: the window, the user's count,
// then stock; on success it counts the user, takes a unit and queues the
// coupon for the flush. A success is remembered under the request ID, so a
// command that go-redis sends again answers the same without grabbing twice;
// a refusal changed nothing, so running it again simply decides afresh (and
// memos stay bounded by the stock, not by the crowd).
//
// KEYS[1] meta hash, KEYS[2] stock, KEYS[3] users hash, KEYS[4] request memo, KEYS[5] pending flush queue (of grab records: record.go),
// KEYS[6] units hash (unit → its grab record, kept for ResendGrabs)
// ARGV[1] user ID, ARGV[2] now (unix ms), ARGV[3] memo TTL (seconds),
// ARGV[4] "1" when the grab carries an Idempotency-Key: refusals are remembered too,
// ARGV[5] cluster flag: "1" checks the node that gives the units (ceiling.go)
// Returns "ok:<unit>:<grabbed at, unix ms>:<valid days>:<remaining>", or
// not_loaded (the template is not in Redis) | not_started | ended |
// limit_reached | sold_out | reserve (the next unit is above the ceiling) |
// moved (another node gave the units: ceiling.go); the last three change nothing.
var grabScript = redis.NewScript(grabFields.Lua() + `
local memo = redis.call('GET', KEYS[4])
if memo then return memo end
local function refuse(res)
	if ARGV[4] == '1' then redis.call('SET', KEYS[4], res, 'EX', tonumber(ARGV[3])) end
	return res
end
local meta = redis.call('HMGET', KEYS[1], 'start', 'end', 'limit', 'days', 'total')
if not meta[1] then return 'not_loaded' end
local now = tonumber(ARGV[2])
if now < tonumber(meta[1]) then return refuse('not_started') end
if now >= tonumber(meta[2]) then return refuse('ended') end
if tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0') >= tonumber(meta[3]) then return refuse('limit_reached') end
if tonumber(redis.call('GET', KEYS[2]) or '0') <= 0 then return refuse('sold_out') end
if ARGV[5] == '1' then
	local me, node = redis.call('CLUSTER', 'MYID'), redis.call('HGET', KEYS[1], 'node')
	if not node then redis.call('HSET', KEYS[1], 'node', me) elseif node ~= me then return 'moved' end
end
if tonumber(meta[5]) - tonumber(redis.call('GET', KEYS[2])) >= tonumber(redis.call('HGET', KEYS[1], 'ceil') or '0') then return 'reserve' end
local left = redis.call('DECR', KEYS[2])
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
local unit = tonumber(meta[5]) - left
local rec = grabRecord({[G_UNIT] = unit, [G_USER] = ARGV[1], [G_GRABBED] = ARGV[2]})
redis.call('RPUSH', KEYS[5], rec)
redis.call('HSET', KEYS[6], unit, rec)
local res = 'ok:' .. unit .. ':' .. ARGV[2] .. ':' .. meta[4] .. ':' .. left
redis.call('SET', KEYS[4], res, 'EX', tonumber(ARGV[3]))
return res
`)

// Grab gives the user one coupon of the template: one Lua script, no
// SQL. requestID identifies the attempt (empty: a new one); the coupon
// reaches the store through the batch flush.
func (s *Service) Grab(ctx context.Context, userID, couponID int64, requestID string) (*model.UserCoupon, error) {
	keyed := "0"
	if req, ok := db.KeyedRequestID(ctx, "coupon", userID); ok {
		requestID, keyed = req, "1"
	} else if requestID == "" {
		requestID = rdb.NewRequestID()
	}
	keys := []string{metaKey(couponID), stockKey(couponID), usersKey(couponID),
		memoKey(couponID, userID, requestID), grabQueue(couponID).Pending, unitsKey(couponID)}
	if held := db.HeldRefusal(ctx); held != nil { // the sale is paused: only a keyed retry of a grab answered before is answered
		if n, err := s.Redis.Exists(ctx, keys[3]).Result(); keyed != "1" || err != nil || n == 0 {
			return nil, held
		}
	}
	loaded := false
	for tries := 0; ; tries++ {
		res, err := s.Eval(ctx, grabScript, keys, userID, s.Now().UnixMilli(), int(grabMemoTTL/time.Second), keyed, s.ClusterFlag()).Text()
		if err != nil {
			return nil, fmt.Errorf("grab coupon %d: %w", couponID, err)
		}
		switch res {
		case "not_started":
			return nil, db.ErrNotStarted
		case "ended":
			return nil, db.ErrEnded
		case "limit_reached":
			return nil, db.ErrLimitReached
		case "sold_out":
			return nil, db.ErrSoldOut
		case "reserve", "moved":
			if tries >= 100 {
				return nil, fmt.Errorf("grab coupon %d: no unit reserved after %d tries", couponID, tries)
			}
			if err := s.reserveUnits(ctx, couponID, res == "moved"); err != nil {
				return nil, err
			}
			continue
		case "not_loaded":
			if loaded {
				return nil, fmt.Errorf("coupon %d did not load into redis", couponID)
			}
			c, err := s.row(ctx, couponID)
			if err != nil {
				return nil, err
			}
			if err := s.load(ctx, c); err != nil {
				return nil, err
			}
			loaded = true
			continue
		}
		g, err := parseGrab(res)
		if err != nil {
			return nil, fmt.Errorf("grab coupon %d: %w", couponID, err)
		}
		s.Events.PublishCoalesced(live.TopicCoupon(couponID), Event{Type: "coupon", CouponID: couponID, Remaining: g.left})
		return &model.UserCoupon{ID: UserCouponID(couponID, g.unit), CouponID: couponID, UserID: userID, Status: "unused",
			GrabbedAt: g.at, ValidUntil: ValidUntil(g.at, g.days)}, nil
	}
}

// grabbed is a successful grab as the script answered it.
type grabbed struct {
	unit, left int64
	at         time.Time
	days       int
}

// parseGrab reads the script's "ok:<unit>:<ms>:<days>:<remaining>".
func parseGrab(res string) (grabbed, error) {
	f := strings.Split(res, ":")
	if len(f) != 5 || f[0] != "ok" {
		return grabbed{}, fmt.Errorf("unexpected answer %q", res)
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return grabbed{}, fmt.Errorf("unexpected answer %q", res)
		}
		n[i] = v
	}
	return grabbed{unit: n[0], at: time.UnixMilli(n[1]).UTC(), days: int(n[2]), left: n[3]}, nil
}

// FlushGrabs moves grabbed coupons of every template from Redis to the store
// under the durable guard, tells the users whose grabs it refused, and
// forgets the queues of templates that ended a while ago and are empty.
func (s *Service) FlushGrabs(ctx context.Context) error {
	ids, err := s.FlushSetIDs(ctx, queuesKey)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		q := grabQueue(id)
		if _, err := s.Flush(ctx, q, func(tx *sql.Tx, recs []string) error { return s.applyGrabs(ctx, tx, id, recs) }); err != nil {
			errs = append(errs, err)
			continue
		}
		end, err := s.Redis.HGet(ctx, metaKey(id), "end").Int64()
		if (errors.Is(err, redis.Nil) || (err == nil && s.Now().Add(-time.Minute).UnixMilli() > end)) &&
			s.Redis.Exists(ctx, q.Pending, q.Processing).Val() == 0 {
			s.Redis.SRem(ctx, queuesKey, id)
		}
	}
	errs = append(errs, s.settleConflicts(ctx))
	return errors.Join(errs...)
}

// UserCoupons lists the coupons the user has grabbed and that have reached
// the store, newest first, with the grabs the durable guard refused as failed
// (under the ID the grab answered, valid until the moment of the grab).
func (s *Service) UserCoupons(ctx context.Context, userID int64) ([]*model.UserCoupon, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT u.id AS id, u.coupon_id, u.status, u.grabbed_ms AS grabbed_ms, u.valid_until_ms, c.title, c.kind, c.value, c.min_spend_cents, u.order_id
		FROM user_coupons u JOIN coupons c ON c.id = u.coupon_id WHERE u.user_id = ?1
		UNION ALL
		SELECT f.coupon_id * ?2 + f.unit, f.coupon_id, ?3, f.grabbed_ms, f.grabbed_ms, c.title, c.kind, c.value, c.min_spend_cents, 0
		FROM coupon_conflicts f JOIN coupons c ON c.id = f.coupon_id WHERE f.user_id = ?1
		ORDER BY grabbed_ms DESC, id DESC LIMIT 500`, userID, userCouponIDMultiple, StatusFailed)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	now := s.Now()
	out := []*model.UserCoupon{}
	for rows.Next() {
		u := &model.UserCoupon{UserID: userID}
		var grabbed, until int64
		if err := rows.Scan(&u.ID, &u.CouponID, &u.Status, &grabbed, &until, &u.Title, &u.Kind, &u.Value, &u.MinSpendCents, &u.OrderID); err != nil {
			return nil, err
		}
		u.GrabbedAt, u.ValidUntil = fromMS(grabbed), fromMS(until)
		if u.Status == "unused" && !now.Before(u.ValidUntil) {
			u.Status = "expired"
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// owned returns the template if actor may manage it: its merchant, or an admin.
func (s *Service) owned(ctx context.Context, actor model.Claims, id int64) (*model.Coupon, error) {
	c, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	if actor.Role != model.RoleAdmin && c.ShopID != actor.UserID {
		return nil, db.Errorf(db.ENOTFOUND, "coupon %d not found", id)
	}
	return c, nil
}

// announce tells every web process that what the front page shows changed
// (db/live's catalog generation), unless *err says nothing was made.
func (s *Service) announce(ctx context.Context, err *error) {
	if *err != nil {
		return
	}
	if e := s.Events.CatalogChanged(ctx); e != nil {
		s.Log.Warn("announce a catalog change", "err", e)
	}
}
