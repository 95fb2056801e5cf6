package web

import (
	"testing"
	"time"
)

// One line a second gets through, carrying how many were held back.
func TestLogThrottle(t *testing.T) {
	now := time.Unix(1000, 0)
	th := newLogThrottle(time.Second)
	th.now = func() time.Time { return now }
	type step struct {
		advance    time.Duration
		ok         bool
		suppressed int
	}
	for i, s := range []step{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{100 * time.Millisecond, false, 0},
		{799 * time.Millisecond, false, 0},
		{time.Millisecond, true, 3},
		{10 * time.Second, true, 0},
	} {
		now = now.Add(s.advance)
		if ok, n := th.allow(); ok != s.ok || n != s.suppressed {
			t.Errorf("step %d: allow() = %v, %d; want %v, %d", i, ok, n, s.ok, s.suppressed)
		}
	}
}
