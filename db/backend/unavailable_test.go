package backend_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
)

// Errors that mean Redis or the database did not answer are told apart from bugs.
func TestUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{fmt.Errorf("grab goods 42: %w", refused), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{fmt.Errorf("grab: %w", context.DeadlineExceeded), true},
		{redis.ErrClosed, true},
		{fmt.Errorf("enqueue: %w", redis.ErrPoolTimeout), true},
		{errors.New("dial tcp 127.0.0.1:6379: connect: connection refused"), true}, // flattened with %v
		{errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"), true},
		{errors.New("database is locked"), true},
		{errors.New("insert order: database is locked (5) (SQLITE_BUSY)"), true},
		// The durable store busy past its timeout, as its driver says it.
		{fmt.Errorf("flush: %w", sqlite3.Error{Code: sqlite3.ErrBusy}), true},
		{fmt.Errorf("flush: %w", sqlite3.Error{Code: sqlite3.ErrLocked}), true},
		{sqlite3.Error{Code: sqlite3.ErrConstraint}, false},
		// A Redis node going away mid-command, or a cluster failing over.
		{fmt.Errorf("grab goods 42: %w", io.EOF), true},
		{errors.New("CLUSTERDOWN The cluster is down"), true},
		{errors.New("order expiry tick: CLUSTERDOWN The cluster is down"), true}, // flattened with %v
		{errors.New("MOVED 4663 127.0.0.1:7001"), true},
		// A service that already said so.
		{db.ErrUnavailable, true},
		{db.Errorf(db.EUNAVAILABLE, "the orders are being flushed"), true},
		{nil, false},
		{errors.New("index out of range"), false},
		{io.ErrUnexpectedEOF, false},
		{db.ErrSoldOut, false},
		{context.Canceled, false},
		{redis.Nil, false},
		// A flush whose lane's lease another flusher took: its context was
		// cancelled, or its commit fenced off; and a lane held past the wait.
		{errors.Join(fmt.Errorf("release batch of {coupon:1}:grabs: %w", context.Canceled), backend.ErrLeaseLost), true},
		{fmt.Errorf("apply batch from {goods:1}:pending: %w", backend.ErrLeaseLost), true},
		{fmt.Errorf("flush {coupon:1}:grabs: %w", backend.ErrLaneBusy), true},
	} {
		if got := backend.Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
