package backend

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
)

// Unavailable is the one place that decides whether err means a backend did
// not answer (Redis or the durable store unreachable, closed, timed out or
// busy; a Redis node gone or failing over, as rdb.FailoverError tells; a
// failure the database calls passing, as sqldb.IsPassing tells) rather than
// a bug. The client is then told 503 unavailable with Retry-After, and may
// try again with the same Idempotency-Key.
//
// A flush that lost its lane's lease to another flusher (a pause, a busy
// machine past the lease's TTL) is one too, though its context was
// cancelled: the lane's new holder applies what it left, so a checkout or
// a refund that flushed first is asked again, not failed.
func Unavailable(err error) bool {
	if errors.Is(err, errLeaseLost) || errors.Is(err, ErrLaneBusy) {
		return true
	}
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, db.ErrUnavailable) || db.ErrorCode(err) == db.EUNAVAILABLE {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		rdb.FailoverError(err) || sqldb.IsPassing(err) {
		return true
	}
	msg := err.Error()
	for _, t := range unavailableText {
		if strings.Contains(msg, t) {
			return true
		}
	}
	return false
}

// unavailableText are the texts of the errors above for errors that reach
// us flattened to a string (a task's error, a library's %v), where the
// chain that errors.Is reads is gone.
var unavailableText = []string{
	"connection refused", "connection reset", "broken pipe", "i/o timeout", "no route to host",
	"redis: connection pool timeout", "redis: client is closed",
	"CLUSTERDOWN ", "TRYAGAIN ", "MASTERDOWN ", "LOADING Redis is loading", "READONLY You can't write",
	"database is locked", "database table is locked", "database is busy", "SQLITE_BUSY",
}
