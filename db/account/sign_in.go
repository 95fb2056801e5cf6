package account

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Failed sign-ins back off per account and per client address: after
// loginFreeFailures (per account) or addrFreeFailures (per address) failures
// in a row, each further failure locks the subject for twice as long as the
// last, from one second up to loginMaxLock. A success clears the account's
// count. The counts live in Redis so that every web process sees them.
const (
	loginFreeFailures = 5
	addrFreeFailures  = 20
	loginFirstLock    = time.Second
	loginMaxLock      = 15 * time.Minute
	loginForget       = time.Hour // a count with no failure for this long starts again
)

// loginFailScript counts one failed sign-in and, past the free failures,
// locks the subject until now + first·2^(n−free), at most max.
//
// KEYS[1] accountFailsKey or addressFailsKey
// ARGV[1] now ms, ARGV[2] free failures, ARGV[3] first lock ms, ARGV[4] max lock ms, ARGV[5] forget ms
// Returns "free" (not locked) or "locked:<the lock's end in unix ms>".
var loginFailScript = redis.NewScript(`
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local free = tonumber(ARGV[2])
local res = 'free'
if n >= free then
	local d = tonumber(ARGV[3]) * 2 ^ math.min(n - free, 30)
	if d > tonumber(ARGV[4]) then d = tonumber(ARGV[4]) end
	local till = string.format('%.0f', tonumber(ARGV[1]) + d)
	redis.call('HSET', KEYS[1], 'until', till)
	res = 'locked:' .. till
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return res
`)

// loginSubjects are the account and address keys of one attempt.
func loginSubjects(username string, from netip.Addr) []string {
	keys := []string{accountFailsKey(username)}
	if from.IsValid() {
		keys = append(keys, addressFailsKey(from))
	}
	return keys
}

// SignIn authenticates a login attempt from a client address. While the
// account or the address is backing off after failures it answers
// rate_limited with the wait, before any password is hashed.
func (s *Service) SignIn(ctx context.Context, username, password string, from netip.Addr) (*model.User, error) {
	if len(username) > 64 {
		return nil, db.Errorf(db.EUNAUTHORIZED, "wrong username or password")
	}
	keys := loginSubjects(username, from)
	now := s.Now()
	if wait, err := s.loginLocked(ctx, keys, now); err != nil {
		return nil, err
	} else if wait > 0 {
		return nil, loginBackoff(wait)
	}
	u, err := s.Authenticate(ctx, username, password)
	switch db.ErrorCode(err) {
	case "":
		s.Redis.Del(ctx, keys[0])
		return u, nil
	case db.EUNAUTHORIZED:
		till := time.Time{}
		for i, k := range keys {
			free := loginFreeFailures
			if i == 1 {
				free = addrFreeFailures
			}
			res, ferr := loginFailScript.Run(ctx, s.Redis, []string{k}, now.UnixMilli(), free,
				loginFirstLock.Milliseconds(), loginMaxLock.Milliseconds(), loginForget.Milliseconds()).Text()
			if ferr != nil {
				return nil, fmt.Errorf("count failed sign-in: %w", ferr)
			}
			if t, locked, ferr := lockEnd(res); ferr != nil {
				return nil, ferr
			} else if locked && t.After(till) {
				till = t
			}
		}
		if !till.IsZero() {
			return nil, loginBackoff(till.Sub(now))
		}
	}
	return nil, err
}

// loginLocked answers how long the longest lock among keys still runs.
func (s *Service) loginLocked(ctx context.Context, keys []string, now time.Time) (time.Duration, error) {
	cmds := make([]*redis.StringCmd, len(keys))
	_, err := s.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGet(ctx, k, "until")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, fmt.Errorf("check sign-in backoff: %w", err)
	}
	var wait time.Duration
	for _, c := range cmds {
		ms, _ := strconv.ParseInt(c.Val(), 10, 64)
		if d := time.UnixMilli(ms).Sub(now); ms > 0 && d > wait {
			wait = d
		}
	}
	return wait, nil
}

// lockEnd reads loginFailScript's answer: when the subject's lock ends, if it is locked.
func lockEnd(res string) (time.Time, bool, error) {
	if res == "free" {
		return time.Time{}, false, nil
	}
	if v, ok := strings.CutPrefix(res, "locked:"); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.UnixMilli(ms), true, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("count failed sign-in: unexpected answer %q", res)
}

func loginBackoff(wait time.Duration) *db.Error {
	secs := int((wait + time.Second - 1) / time.Second)
	return &db.Error{Code: db.ERATELIMITED, Message: fmt.Sprintf("too many failed sign-ins; try again in %d s", secs), RetryAfter: wait}
}
