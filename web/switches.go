package web

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/handlers"
)

// The steering switches' doors (docs/OPERATIONS.md, "Steering switches"):
// each reads the process's snapshot of the switches, with no I/O.

// errSalePaused is the answer to a grab while the sale is paused.
var errSalePaused = &db.Error{Code: db.EUNAVAILABLE, RetryAfter: 5 * time.Second,
	Message: "the sale is paused for a moment: try again shortly"}

// errMerchantReadOnly is the answer to a merchant's change while merchants are read-only.
var errMerchantReadOnly = &db.Error{Code: db.EFORBIDDEN,
	Message: "merchant changes are paused by an admin while the sale runs (read-only): you can look, and change things again once it is lifted"}

// switchesNow is the switches in force on this process.
func (s *Server) switchesNow() model.Switches {
	if s.switches == nil {
		return model.DefaultSwitches()
	}
	return s.switches()
}

// pausedEvent is the live event that tells a page whether the sale is
// paused ({"type":"sale_paused","paused":true}): static/goods.js holds the
// Grab buttons and says "Paused" while it is. A socket opened while the
// sale is paused gets it first (the hub's Hello), and every socket of a
// process when the process's switches turn (SwitchesChanged).
func pausedEvent(paused bool) []byte {
	if paused {
		return []byte(`{"type":"sale_paused","paused":true}`)
	}
	return []byte(`{"type":"sale_paused","paused":false}`)
}

// pausedHello is a new socket's first message while the sale is paused
// (none otherwise: a socket's first answer stays its first subscription's,
// as clients expect; static/goods.js takes a socket that opens without it
// as "not paused").
func (s *Server) pausedHello() []byte {
	if s.switchesNow().SalePaused {
		return pausedEvent(true)
	}
	return nil
}

// SwitchesChanged tells this process's sockets when the sale is paused or
// resumed; give it to the switches' OnChange.
func (s *Server) SwitchesChanged(sw model.Switches) {
	if s.pausedSent.Swap(sw.SalePaused) != sw.SalePaused {
		s.Hub.Broadcast(pausedEvent(sw.SalePaused))
	}
}

// saleOpen refuses a grab (goods, red packet, coupon) while the sale is
// paused: 503 unavailable with Retry-After. Queue joins and tickets do not
// pass it, so every place is kept. A grab with an Idempotency-Key goes on
// with the refusal held (db.WithHeldRefusal): the grab answers a retry of
// one answered before as it answered then, anything else with the refusal.
func (s *Server) saleOpen(c *fiber.Ctx) error {
	if s.switchesNow().SalePaused {
		if !db.ValidIdempotencyKey(c.Get(handlers.HeaderIdempotencyKey)) {
			return errSalePaused
		}
		c.SetUserContext(db.WithHeldRefusal(c.UserContext(), errSalePaused))
	}
	return c.Next()
}

// merchantWrites refuses, while merchants are read-only, every change a
// merchant (not an admin) makes through the admin API or the merchant pages.
// A keyed staff write (Mount.StaffKeyed) goes on with the refusal held, as
// a keyed grab does past a paused sale: backend.Keyed answers a retry of
// one answered before as it answered then, anything else with the refusal.
func (s *Server) merchantWrites(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if cl, _ := handlers.ClaimsOf(c); cl.Role != model.RoleAdmin && s.switchesNow().MerchantReadOnly {
		if !s.keyedStaffWrite(c) {
			return errMerchantReadOnly
		}
		c.SetUserContext(db.WithHeldRefusal(c.UserContext(), errMerchantReadOnly))
	}
	return c.Next()
}

// keyedStaffWrite reports whether the request is a write mounted by
// Mount.StaffKeyed (its service answers a held refusal for a key it has not
// answered) and carries a valid Idempotency-Key. Any other write would
// ignore a held refusal, so it is refused at this door.
func (s *Server) keyedStaffWrite(c *fiber.Ctx) bool {
	if !db.ValidIdempotencyKey(c.Get(handlers.HeaderIdempotencyKey)) {
		return false
	}
	for _, p := range s.keyed {
		if p.matches(c.Method(), c.Path()) {
			return true
		}
	}
	return false
}

// routePattern is a route as mounted: its method and path, a segment
// ":name" standing for any one non-empty segment.
type routePattern struct {
	method string
	parts  []string
}

func patternOf(method, path string) routePattern {
	return routePattern{method: method, parts: strings.Split(strings.Trim(path, "/"), "/")}
}

func (p routePattern) matches(method, path string) bool {
	if method != p.method {
		return false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != len(p.parts) {
		return false
	}
	for i, want := range p.parts {
		if parts[i] == "" || (!strings.HasPrefix(want, ":") && parts[i] != want) {
			return false
		}
	}
	return true
}
