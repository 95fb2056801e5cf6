package dbtest

import (
	"sync"
	"time"
)

// Clock is a settable time source a test gives its services (Backend.Now =
// clk.Now) so that sales open, orders lapse and leases run out when the test
// says, never by waiting.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading now until moved.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

func (c *Clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *Clock) Set(t time.Time)         { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }
