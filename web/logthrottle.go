package web

import (
	"sync"
	"time"
)

// logThrottle lets at most one log line through per interval and counts the
// ones it held back, so an outage that fails every request logs a few lines
// a second with a count instead of one line per request.
type logThrottle struct {
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func newLogThrottle(every time.Duration) *logThrottle {
	return &logThrottle{every: every, now: time.Now}
}

// allow reports whether to log now and, if so, how many lines were held back since the last one.
func (t *logThrottle) allow() (ok bool, suppressed int) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		return false, 0
	}
	t.last, suppressed, t.suppressed = now, t.suppressed, 0
	return true, suppressed
}
