package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
)

// Every code the contract names maps to the contract's status.
func TestEveryCodeHasItsStatus(t *testing.T) {
	want := map[string]int{
		db.EINVALID: 400, db.EUNAUTHORIZED: 401, db.EFORBIDDEN: 403, db.ENOTFOUND: 404,
		db.ECONFLICT: 409, db.ESOLDOUT: 409, db.ELIMITREACHED: 409, db.EALREADY: 409, db.ENOTSTARTED: 409,
		db.EENDED: 409, db.EEXPIRED: 409, db.ETOOLATE: 409, db.ENOTCONFIGURED: 409,
		db.ERATELIMITED: 429, db.ETOOLARGE: 413, db.EUNAVAILABLE: 503, db.EINTERNAL: 500,
	}
	for code, status := range want {
		if got := statusOf[code]; got != status {
			t.Errorf("%s: status %d, want %d", code, got, status)
		}
	}
	if len(statusOf) != len(want) {
		t.Errorf("statusOf has %d codes, the contract %d", len(statusOf), len(want))
	}
}

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
		// A Redis node going away mid-command, or a cluster failing over.
		{fmt.Errorf("grab goods 42: %w", io.EOF), true},
		{errors.New("CLUSTERDOWN The cluster is down"), true},
		{errors.New("order expiry tick: CLUSTERDOWN The cluster is down"), true}, // flattened with %v
		{errors.New("MOVED 4663 127.0.0.1:7001"), true},
		{nil, false},
		{errors.New("index out of range"), false},
		{io.ErrUnexpectedEOF, false},
		{db.ErrSoldOut, false},
		{context.Canceled, false},
		{redis.Nil, false},
	} {
		if got := unavailable(tc.err); got != tc.want {
			t.Errorf("unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
