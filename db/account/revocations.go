package account

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Revocations are the sessions that have ended before their tokens expire:
// single sessions (a logout) and every session of a user issued before a
// moment (a password change). Redis holds the record; every web process keeps
// a copy in memory, loaded at start, after each pub/sub reconnect and every
// Refresh, and kept current by messages on RevocationChannel, so checking a
// token costs no look-up.
type Revocations struct {
	// Refresh is how often the whole record is loaded again, a backstop for a
	// lost message (0: one minute).
	Refresh time.Duration
	Log     *slog.Logger
	Now     func() time.Time

	rdb redis.UniversalClient
	ttl time.Duration // tokens' lifetime: a user's cut-off older than this voids nothing

	sessions sync.Map // session ID → its token's expiry (unix seconds)
	users    sync.Map // user ID → sessions issued before this are void (unix µs)

	follower *rdb.Follower
	loop     *lifecycle.Loop // follows the channel (Loop)
}

// RevocationChannel carries each new revocation to every web process.
const RevocationChannel = "seckill:revocations"

// revocationChannelOf is RevocationChannel for c (rdb.PerDatabase).
func revocationChannelOf(c redis.UniversalClient) string {
	return rdb.PerDatabase(c, RevocationChannel)
}

// NewRevocations returns the record in rdb for tokens that live for ttl. It
// can revoke at once; Start mirrors it in memory for Revoked.
func NewRevocations(c redis.UniversalClient, ttl time.Duration) *Revocations {
	r := &Revocations{rdb: c, ttl: ttl, Now: time.Now, Log: slog.Default()}
	r.loop = lifecycle.New("revocations", func(ctx context.Context) { r.follower.Run(ctx) })
	return r
}

// Revoked reports whether the session of these claims has ended, from memory alone.
func (r *Revocations) Revoked(c model.Claims) bool {
	if v, ok := r.users.Load(c.UserID); ok && c.IssuedAt < v.(int64) {
		return true
	}
	_, ok := r.sessions.Load(c.SessionID)
	return ok
}

// Revoke ends the session of these claims on every process.
func (r *Revocations) Revoke(ctx context.Context, c model.Claims) error {
	if c.SessionID == "" {
		return db.Errorf(db.EINVALID, "the token has no session")
	}
	r.applySession(c.SessionID, c.Expires)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, revokedSessionsKey(), redis.Z{Score: float64(c.Expires), Member: c.SessionID})
		p.ZRemRangeByScore(ctx, revokedSessionsKey(), "-inf", "("+strconv.FormatInt(r.Now().Unix(), 10))
		p.Publish(ctx, revocationChannelOf(r.rdb), "s "+c.SessionID+" "+strconv.FormatInt(c.Expires, 10))
		return nil
	})
	if err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// revokeUserScript raises a user's cut-off, never lowers it (clocks of
// processes differ), and drops cut-offs too old to void any token.
//
// KEYS[1] revokedUsersKey
// ARGV[1] user ID, ARGV[2] cut-off (unix µs), ARGV[3] drop cut-offs below this (unix µs)
// Returns "ok:<the user's cut-off now in force, unix µs>".
var revokeUserScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or tonumber(ARGV[2]) > tonumber(cur) then
	redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
	cur = ARGV[2]
end
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
	if tonumber(all[i+1]) < tonumber(ARGV[3]) then redis.call('HDEL', KEYS[1], all[i]) end
end
return 'ok:' .. cur
`)

// RevokeUser ends every session of the user issued before at, on every process.
func (r *Revocations) RevokeUser(ctx context.Context, userID int64, at time.Time) error {
	cut := at.UnixMicro()
	r.applyUser(userID, cut)
	res, err := revokeUserScript.Run(ctx, r.rdb, []string{revokedUsersKey()}, userID, cut, r.staleBefore(r.Now())).Text()
	if err != nil {
		return fmt.Errorf("revoke sessions of user %d: %w", userID, err)
	} else if !strings.HasPrefix(res, "ok:") {
		return fmt.Errorf("revoke sessions of user %d: unexpected answer %q", userID, res)
	}
	msg := "u " + strconv.FormatInt(userID, 10) + " " + strconv.FormatInt(cut, 10)
	if err := r.rdb.Publish(ctx, revocationChannelOf(r.rdb), msg).Err(); err != nil {
		return fmt.Errorf("announce revocation: %w", err)
	}
	return nil
}

// Open subscribes to new revocations and loads the record, so nothing
// revoked afterwards is missed once Loop runs; Close undoes it.
func (r *Revocations) Open(ctx context.Context) error {
	// Set only once started, so a Close after a failed Start (a process
	// whose opening timed out) finds nothing to stop.
	f, err := rdb.Follow(ctx, r.rdb, RevocationChannel)
	if err != nil {
		return fmt.Errorf("revocations: %w", err)
	}
	if err := r.Load(ctx); err != nil {
		f.Close()
		return err
	}
	refresh := r.Refresh
	if refresh <= 0 {
		refresh = time.Minute
	}
	// The whole record is loaded again after a resubscription (messages
	// sent meanwhile were lost) and every Refresh.
	f.Gap, f.Every, f.Tick = r.reload, refresh, func(context.Context) { r.reload() }
	f.Message = func(payload string) {
		if err := r.apply(payload); err != nil {
			r.Log.Warn("bad revocation message", "err", err)
		}
	}
	r.follower = f
	return nil
}

// Loop follows the revocations announced after Open until stopped (by Close
// at the latest). Main starts it.
func (r *Revocations) Loop() *lifecycle.Loop { return r.loop }

func (r *Revocations) reload() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Load(ctx); err != nil {
		r.Log.Warn("load revocations", "err", err)
	}
}

// Load adds the whole record in Redis to memory and forgets what has lapsed.
// Memory only ever gains revocations before they lapse: a Redis that lost
// its data cannot bring an ended session back on a process that knew of it.
func (r *Revocations) Load(ctx context.Context) error {
	now := r.Now()
	key := revokedSessionsKey()
	if err := r.rdb.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(now.Unix(), 10)).Err(); err != nil {
		return fmt.Errorf("load revocations: %w", err)
	}
	sessions, err := r.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		return fmt.Errorf("load revocations: %w", err)
	}
	users, err := r.rdb.HGetAll(ctx, revokedUsersKey()).Result()
	if err != nil {
		return fmt.Errorf("load revocations: %w", err)
	}
	for _, z := range sessions {
		r.applySession(z.Member.(string), int64(z.Score))
	}
	for k, v := range users {
		id, err1 := strconv.ParseInt(k, 10, 64)
		cut, err2 := strconv.ParseInt(v, 10, 64)
		if err1 == nil && err2 == nil {
			r.applyUser(id, cut)
		}
	}
	r.forgetLapsed(now)
	return nil
}

// forgetLapsed drops revocations whose tokens have all expired.
func (r *Revocations) forgetLapsed(now time.Time) {
	r.sessions.Range(func(k, v any) bool {
		if v.(int64) < now.Unix() {
			r.sessions.Delete(k)
		}
		return true
	})
	stale := r.staleBefore(now)
	r.users.Range(func(k, v any) bool {
		if v.(int64) < stale {
			r.users.CompareAndDelete(k, v)
		}
		return true
	})
}

// staleBefore is the cut-off below which a user's cut-off voids no live
// token (unix µs); without a known token lifetime, none is stale.
func (r *Revocations) staleBefore(now time.Time) int64 {
	if r.ttl <= 0 {
		return 0
	}
	return now.Add(-r.ttl).UnixMicro()
}

// apply adds one announced revocation: "s <session ID> <expiry>" or "u <user ID> <cut-off>".
func (r *Revocations) apply(msg string) error {
	f := strings.Fields(msg)
	if len(f) != 3 {
		return fmt.Errorf("revocation %q: want three fields", msg)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return fmt.Errorf("revocation %q: %w", msg, err)
	}
	switch f[0] {
	case "s":
		r.applySession(f[1], n)
	case "u":
		id, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Errorf("revocation %q: %w", msg, err)
		}
		r.applyUser(id, n)
	default:
		return fmt.Errorf("revocation %q: unknown kind", msg)
	}
	return nil
}

func (r *Revocations) applySession(sid string, expires int64) {
	r.sessions.Store(sid, expires)
}

// applyUser raises the user's cut-off to cut.
func (r *Revocations) applyUser(userID, cut int64) {
	for {
		v, loaded := r.users.LoadOrStore(userID, cut)
		if !loaded || v.(int64) >= cut || r.users.CompareAndSwap(userID, v, cut) {
			return
		}
	}
}

// Close stops following revocations; what is in memory stays.
func (r *Revocations) Close() {
	if r.follower == nil {
		return
	}
	r.loop.Stop()
	r.follower.Close()
	r.follower = nil
}
