package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/handlers"
	"github.com/seckill/seckill/web/ratelimit"
)

// limiters are the abuse limits (docs/OPERATIONS.md, "Abuse limits"), each kept in process: the
// allowed path costs a map look-up, never a Redis round trip. Each process
// enforces its share of a limit (the limit divided by the number of live web
// processes, counted through a Redis heartbeat), so a client spread over
// every process gets the limit in total.
type limiters struct {
	grab    *ratelimit.Limiter[int64]      // per shopper
	ip      *ratelimit.Limiter[netip.Addr] // API requests per client address
	authIP  *ratelimit.Limiter[netip.Addr] // login and sign-up per client address
	authAcc *ratelimit.Limiter[string]     // login and sign-up per account name
	members *ratelimit.Members
	beat    *lifecycle.Loop // this process's heartbeat, from Start to Shutdown
}

// membersBeat is how often a web process says it is alive to the others.
const membersBeat = 5 * time.Second

func newLimiters(l Limits, now func() time.Time) *limiters {
	return &limiters{
		grab:    ratelimit.New[int64](l.Grab, now),
		ip:      ratelimit.New[netip.Addr](l.IP, now),
		authIP:  ratelimit.New[netip.Addr](l.Auth, now),
		authAcc: ratelimit.New[string](l.Auth, now),
	}
}

func (l *limiters) off() bool {
	return l.grab.Rate().Off() && l.ip.Rate().Off() && l.authIP.Rate().Off()
}

// setShare divides every limit among n live web processes.
func (l *limiters) setShare(n int) {
	l.grab.SetShare(n)
	l.ip.SetShare(n)
	l.authIP.SetShare(n)
	l.authAcc.SetShare(n)
}

// startMembers counts this process in and readies its heartbeat (Loops),
// which keeps the others counting it. A process with every limit off
// enforces no share, so it does not join.
func (s *Server) startMembers(ctx context.Context) {
	if s.limits.off() {
		return
	}
	var b [8]byte
	rand.Read(b[:])
	lim := s.limits
	lim.members = ratelimit.NewMembers(s.redis, hex.EncodeToString(b[:]), membersBeat, nil)
	lim.members.OnCount = lim.setShare
	lim.members.Beat(ctx) // the first count before serving
	lim.beat = lifecycle.New("rate-limit members", lim.members.Run)
}

func (s *Server) stopMembers() {
	if s.limits.beat != nil {
		s.limits.beat.Stop()
	}
}

// refuse answers 429 rate_limited with Retry-After in whole seconds.
func refuse(c *fiber.Ctx, wait time.Duration) error {
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retrySeconds(wait)))
	return db.ErrRateLimited
}

func retrySeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// limitIP caps API requests per client address (RATE_IP).
func (s *Server) limitIP(c *fiber.Ctx) error {
	if ok, wait := s.limits.ip.Allow(handlers.ClientIP(c)); !ok {
		return refuse(c, wait)
	}
	return c.Next()
}

// limitGrab caps grabs per shopper (RATE_GRAB) across goods, red packets and coupons.
func (s *Server) limitGrab(c *fiber.Ctx) error {
	cl, ok := handlers.ClaimsOf(c)
	if !ok {
		return db.ErrUnauthorized
	}
	if ok, wait := s.limits.grab.Allow(cl.UserID); !ok {
		return refuse(c, wait)
	}
	return c.Next()
}

// limitAuth caps login and sign-up attempts per client address and per
// account name (RATE_AUTH), before any password is hashed.
func (s *Server) limitAuth(c *fiber.Ctx) error {
	if ok, wait := s.limits.authIP.Allow(handlers.ClientIP(c)); !ok {
		return refuse(c, wait)
	}
	if name := attemptedUsername(c); name != "" {
		if ok, wait := s.limits.authAcc.Allow(name); !ok {
			return refuse(c, wait)
		}
	}
	return c.Next()
}

// attemptedUsername reads the username a login or sign-up names, from JSON or a form, folded to lower case.
func attemptedUsername(c *fiber.Ctx) string {
	var name string
	if strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationJSON) {
		var in struct {
			Username string `json:"username"`
		}
		json.Unmarshal(c.Body(), &in)
		name = in.Username
	} else {
		name = c.FormValue("username")
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return strings.ToLower(name)
}

// LimitShare is the number of web processes this one believes share the limits.
func (s *Server) LimitShare() int { return s.limits.grab.Share() }
